"""The option checks run without a machine: importing them reaches no transport, no run user and
no Django (runs/lab/options.py), and the run specification's validation reaches no lab module
that acts on a host (runs/bench/specs.py, runs/bench/spec_checks.py). Each import is made in a fresh
interpreter, so what this test process has already imported cannot hide an import."""

import json
import subprocess
import sys

from django.conf import settings

# What runs a command on a host, or needs a configured Django, and what imports those.
MACHINE_MODULES = (
    "runs.lab.transport.interface",
    "runs.lab.transport.ssh",
    "runs.lab.transport.local",
    "runs.lab.host.run_user",
    "runs.lab.storage.prepare",
    "runs.lab.storage.checks",
    "runs.lab.storage.mounts",
    "runs.lab.postgres.cluster",
    "runs.lab.pgbench.commands",
    "runs.lab.transport.process",
    # What writes (the layers: runs/tests/project/test_layers.py).
    "runs.jobs.dispatch",
    "runs.jobs.execute",
    *(
        f"runs.{domain}.services"
        for domain in ("bench", "builds", "baselines", "campaigns", "compare", "inventory", "common")
    ),
)
PURE_LAB_MODULES = {
    "runs",
    "runs.lab",
    "runs.lab.options",
    "runs.lab.errors",
    "runs.lab.postgres.settings",
    "runs.lab.postgres.setting_values",
    "runs.lab.pgbench.options",
    "runs.lab.pgbench.script",
    "runs.lab.pgbench.lexer",
    "runs.lab.storage.device_paths",
    # The lab's packages themselves (their __init__ is a docstring).
    "runs.lab.postgres",
    "runs.lab.pgbench",
    "runs.lab.storage",
}
# Enough Django for the models, and none of benchlab's settings: the real INSTALLED_APPS bring
# the admin, which imports the services (and they the transport) whatever runs.bench.specs does.
MINIMAL_DJANGO = """
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "runs"])
django.setup()
"""


def modules_after(statement: str, setup: str = "") -> set[str]:
    """The modules a fresh interpreter holds after `setup` and then `statement`, minus those `setup` loaded."""
    code = f"import json, sys\n{setup}\nbefore = set(sys.modules)\n{statement}\n"
    code += "print(json.dumps(sorted(set(sys.modules) - before)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=settings.BASE_DIR, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout))


def within(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_the_option_checks_import_nothing_that_touches_a_machine_nor_django() -> None:
    imported = modules_after("import runs.lab.options")

    assert within(imported, (*MACHINE_MODULES, "paramiko", "django")) == []


def test_the_option_checks_import_only_the_standard_library_and_pure_lab_modules() -> None:
    imported = modules_after("import runs.lab.options")

    ours = {m for m in imported if m == "runs" or m.startswith("runs.")}
    others = {m.partition(".")[0] for m in imported} - {"runs"}
    assert ours - PURE_LAB_MODULES == set()
    assert sorted(m for m in others if m not in sys.stdlib_module_names and not m.startswith("_")) == []


def test_the_run_specification_reaches_no_lab_module_that_acts_on_a_host() -> None:
    # paramiko is not on the list: runs.models.inventory imports runs.common.ssh_keys, which uses it to
    # read pinned host keys, so every importer of the models has it (it connects nowhere by itself).
    imported = modules_after("import runs.bench.spec_checks", setup=MINIMAL_DJANGO)

    assert {"runs.bench.specs", "runs.bench.spec_checks", "runs.lab.options"} <= imported
    assert within(imported, MACHINE_MODULES) == []
