"""Real output captured from the tools benchlab reads (runs/tests/fixtures/README.md says how each
file was made): what the parser tests and the page tests feed in."""

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def captured(name: str) -> str:
    """The text of fixtures/<name>."""
    return (FIXTURES / name).read_text()
