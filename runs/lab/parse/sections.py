"""The output of a shell snippet that prints several things at once, each after a line
"==<name>": one round trip to a host instead of one per file read."""

import re


def split_sections(text: str) -> dict[str, str]:
    """{"head": what came before the first marker, <name>: what followed "==<name>"}."""
    parts = re.split(r"^==(\S+)$", text, flags=re.MULTILINE)
    return {"head": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}
