"""The layers keep their direction (ARCHITECTURE.md): what reads imports nothing that writes, and
what writes imports nothing of the web's. Read from each module's own import statements (also
those inside functions), so a new module is held to it from its first line."""

import ast
from pathlib import Path

from django.conf import settings

RUNS = Path(settings.BASE_DIR) / "runs"
READERS = ("selectors.py", "queue_waits.py", "comparison.py", "comparison_query.py", "campaign_results.py",
           "run_list_rows.py")  # fmt: skip
WRITERS = ("runs.services", "runs.tasks")
WEB = ("runs.views", "runs.api", "runs.forms", "runs.admin", "runs.urls")


def imported_by(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def crossing(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {path.relative_to(RUNS): [m for m in imported_by(path) if m.startswith(forbidden)] for path in paths}
    return {str(path): sorted(modules) for path, modules in found.items() if modules}


def test_the_readers_import_no_service_and_no_task() -> None:
    readers = [path for path in RUNS.glob("*.py") if path.name in READERS or path.name.endswith("_queries.py")]

    assert len(readers) >= len(READERS)
    assert crossing(readers, WRITERS) == {}


def test_the_services_import_nothing_of_the_web() -> None:
    assert crossing(sorted((RUNS / "services").glob("*.py")), WEB) == {}
