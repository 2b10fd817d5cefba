"""What the code and the documents point at exists: every `runs.…` dotted name and `runs/….py`
path in a docstring, comment or document names a module that is there and, after it, a name the
module defines. A module moved or a function renamed leaves no stale pointer behind."""

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
DOCUMENTS = ("README.md", "ARCHITECTURE.md", "RELIABILITY.md", "SECURITY.md", "Makefile")
SOURCES = ("runs", "benchlab", "benchmarks", "scripts")
DOTTED = re.compile(r"(?<![\w./])runs(?:\.[A-Za-z_]\w*){2,}")  # runs.X alone is a label, a permission or a variable
# The same written from inside the app: "services.host_reach", "lab.pgbench.start_detached".
# Read in prose only (comments, strings, documents): in code, "lab.fio" is an attribute. Django's
# own admin, forms and models are left out: "forms.Form" is Django's.
PACKAGES = ("jobs", "bench", "builds", "baselines", "campaigns", "compare", "inventory", "common", "lab", "services")
SHORT = re.compile(r"(?<![\w./-])(?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+(?![\w-])")
FILE_SUFFIXES = ("py", "js", "html", "md", "json", "css", "txt")
PATH = re.compile(r"(?<![\w./])(runs/[\w/]+\.py)(?::(\w+))?")


def texts() -> dict[str, str]:
    files = [ROOT / name for name in DOCUMENTS if (ROOT / name).exists()]
    for folder in SOURCES:
        files += [p for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts]
    return {str(path.relative_to(ROOT)): path.read_text() for path in files}


@cache
def defined_names(module_path: Path) -> frozenset[str]:
    tree = ast.parse(module_path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


def module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def dotted_problem(name: str) -> str | None:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        found = module_file(parts[:cut])
        if found is not None:
            rest = parts[cut:]
            if rest and rest[0] not in defined_names(found) and module_file(parts[: cut + 1]) is None:
                return f"{'.'.join(parts[:cut])} has no {rest[0]}"
            return None
    return "no such module"


def prose(where: str, text: str) -> str:
    """The comments and strings of Python source (a document is prose throughout)."""
    if not where.endswith(".py"):
        return text
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    pieces = [token.string for token in tokens if token.type in (tokenize.COMMENT, tokenize.STRING)]
    return "\n".join(piece for piece in pieces if not re.match(r"[rRbB]?[fF]", piece))  # an f-string holds code


def problems() -> list[str]:
    found = []
    for where, text in texts().items():
        for match in DOTTED.finditer(text):
            name = match.group(0).rstrip(".")
            if (problem := dotted_problem(name)) is not None:
                found.append(f"{where}: {name} ({problem})")
        for match in SHORT.finditer(prose(where, text) if not where.startswith(("runs/tests/", "scripts/")) else ""):
            if match.group(0).rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue
            name = "runs." + match.group(0)
            if (problem := dotted_problem(name)) is not None:
                found.append(f"{where}: {match.group(0)} ({problem})")
        for match in PATH.finditer(text):
            path, attribute = match.group(1), match.group(2)
            if not (ROOT / path).is_file():
                found.append(f"{where}: {path} (no such file)")
            elif attribute and attribute not in defined_names(ROOT / path):
                found.append(f"{where}: {path}:{attribute} (not defined there)")
    return sorted(set(found))


def test_every_pointer_to_a_module_names_one_that_is_there() -> None:
    assert problems() == []
