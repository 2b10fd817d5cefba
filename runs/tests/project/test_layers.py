"""The layers keep their direction (ARCHITECTURE.md): what reads imports nothing that writes, and
what writes imports nothing of the web's. Read from each module's own import statements (also
those inside functions), so a new module is held to it from its first line.

A module's role is in its place, the same in every domain package: `<domain>/selectors` reads,
`<domain>/services` writes, and so do the job mechanism (runs.jobs, but for its kinds' declaration
and its selectors) and the Celery tasks; the web is views, API, forms, admin and URLs."""

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
RUNS = ROOT / "runs"
JOBS_THAT_DO_NOT_WRITE = ("runs.jobs.kinds", "runs.jobs.selectors", "runs.jobs.progress")
WEB = ("runs.views", "runs.api", "runs.forms", "runs.admin", "runs.urls")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_by(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update([node.module] + [f"{node.module}.{alias.name}" for alias in node.names])
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def product_modules() -> list[Path]:
    return [p for p in RUNS.rglob("*.py") if not {"tests", "migrations"} & set(p.relative_to(RUNS).parts)]


def is_reader(module: str) -> bool:
    return "selectors" in module.split(".")


def is_writer(module: str) -> bool:
    parts = module.split(".")
    if module.startswith("runs.jobs") and not module.startswith(JOBS_THAT_DO_NOT_WRITE) and module != "runs.jobs":
        return True
    return "services" in parts or module == "runs.tasks"


def is_web(module: str) -> bool:
    return module.startswith(WEB)


def crossing(role: str, forbidden: str) -> dict[str, list[str]]:
    test = {"reader": is_reader, "writer": is_writer, "web": is_web}
    found = {}
    for path in product_modules():
        if test[role](module_name(path)):
            bad = sorted(name for name in imported_by(path) if test[forbidden](name))
            if bad:
                found[module_name(path)] = bad
    return found


def test_the_roles_are_read_from_the_place() -> None:
    assert is_reader("runs.bench.selectors.run_page") and is_reader("runs.jobs.selectors")
    assert is_writer("runs.builds.services.execute") and is_writer("runs.jobs.dispatch") and is_writer("runs.tasks")
    assert not is_writer("runs.jobs.kinds") and not is_writer("runs.campaigns.matrix")
    assert is_web("runs.forms.campaigns") and is_web("runs.views.cancel")
    readers = [path for path in product_modules() if is_reader(module_name(path))]
    assert len(readers) >= 12  # every domain's selectors were found


def test_the_readers_import_no_service_and_no_task() -> None:
    assert crossing("reader", "writer") == {}


def test_the_services_import_nothing_of_the_web() -> None:
    assert crossing("writer", "web") == {}


# What each package may import of benchlab (ARCHITECTURE.md, "Packages"): the domains sit on the
# job mechanism, which sits on the inventory's connections, common and the lab; nothing below the
# web imports it, but for a campaign's plan, which is validated by the forms the page posts.
KINDS_MAY = {"common", "inventory", "jobs", "lab", "models"}
MAY_IMPORT: dict[str, set[str]] = {
    "lab": set(),
    "common": {"lab", "models"},
    "models": {"common", "lab"},
    "jobs": {"common", "inventory", "lab", "models"},
    "inventory": {"common", "compare", "jobs", "lab", "models"},
    "bench": KINDS_MAY | {"method"},
    "builds": KINDS_MAY,
    "baselines": KINDS_MAY,
    "compare": {"bench", "common", "lab", "models"},
    "campaigns": {"baselines", "bench", "builds", "common", "compare", "forms", "jobs", "lab", "method", "models"},
    "method": {"bench", "common", "compare", "lab", "models"},
    "schedules": {"campaigns", "common", "models"},
    "watch": {"bench", "common", "compare", "jobs", "models", "notify"},
    "notify": {"common", "models"},
    "accounts": {"common", "models"},
    "notes": {"common", "models"},
}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "runs" else None


def package_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in product_modules():
        package = package_of(module_name(path))
        if package in MAY_IMPORT:
            imported = {package_of(name) for name in imported_by(path)} - {None, package}
            found.setdefault(package, set()).update(name for name in imported if name)
    return found


def test_each_package_imports_only_what_it_may() -> None:
    found = package_imports()

    assert set(found) >= set(MAY_IMPORT) - {"lab"}  # every package was read
    assert {
        package: sorted(found[package] - allowed)
        for package, allowed in MAY_IMPORT.items()
        if found.get(package, set()) - allowed
    } == {}


def test_a_writer_importing_a_view_is_found(tmp_path: Path) -> None:
    assert is_web("runs.views.runs") and "runs.views.runs" in imported_by(
        _written(tmp_path, "from runs.views import runs\n")
    )


def _written(folder: Path, text: str) -> Path:
    path = folder / "module.py"
    path.write_text(text)
    return path
