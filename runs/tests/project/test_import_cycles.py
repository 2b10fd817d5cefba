"""No module of benchlab imports itself back through others: the packages keep a direction
(ARCHITECTURE.md), so a module can be read, tested and moved with what it imports and nothing
that imports it. Read from each module's own import statements, also those inside functions and
under TYPE_CHECKING: an import deferred to dodge a cycle is still the cycle."""

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PACKAGES = ("runs", "benchlab")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def benchlab_modules() -> dict[str, Path]:
    """Every module of the product: not its tests, nor generated migrations."""
    paths = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    kept = [path for path in paths if not {"tests", "migrations"} & set(path.parts)]
    return {module_name(path): path for path in kept}


def imports_of(path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The product's modules `path` imports (`from package import module` names the module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = benchlab_modules()
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
            elif successor not in index:
                index[successor] = low[successor] = len(index)
                stack.append(successor)
                on_stack.add(successor)
                work.append((successor, iter(sorted(graph[successor]))))
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}

    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_finder_reads_the_imports_that_hide_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "first.py").write_text("def later():\n    from second import thing\n")
    (tmp_path / "second.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import first\n")
    modules = {"first": tmp_path / "first.py", "second": tmp_path / "second.py"}

    graph = {name: imports_of(path, modules) for name, path in modules.items()}

    assert cycles(graph) == [["first", "second"]]


def test_no_module_imports_itself_back() -> None:
    graph = import_graph()

    assert len(graph) > 100  # the whole product was read
    assert cycles(graph) == []
