"""What Docker, make and CI rely on exists. Docker cannot run here, so its files are checked
for what can be checked without it: they parse, and every command and path they name exists."""

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from benchlab.settings import _database_config
from runs.templatetags.vendor import CHARTJS_PATH, CHARTJS_VERSION

ROOT = Path(settings.BASE_DIR)
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
ENTRY_SCRIPTS = {"scripts/prepare", "scripts/web", "scripts/worker"}


def compose_commands(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2].replace("&&", " "))
    return [word for word in words if word.startswith("scripts/")]


def test_compose_has_the_four_services() -> None:
    assert set(COMPOSE["services"]) == {"postgres", "redis", "web", "worker"}


@pytest.mark.parametrize("name", ["web", "worker"])
def test_compose_runs_the_same_entry_scripts_as_make_run(name: str) -> None:
    service = COMPOSE["services"][name]
    commands = compose_commands(service)

    assert commands, f"{name} runs no benchlab script"
    for command in commands:
        assert command in ENTRY_SCRIPTS
        assert os.access(ROOT / command, os.X_OK), f"{command} is not executable"
    assert (ROOT / service["build"] / "Dockerfile").exists()


def test_make_run_uses_those_entry_scripts() -> None:
    makefile = (ROOT / "Makefile").read_text()
    serve = (ROOT / "scripts/serve").read_text()

    run_recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert run_recipe is not None
    assert "scripts/prepare" in run_recipe.group(1) and "scripts/serve" in run_recipe.group(1)
    assert "scripts/web" in serve and "scripts/worker" in serve


def test_compose_environment_gives_a_valid_database_url() -> None:
    environment = COMPOSE["x-benchlab-environment"]
    url = environment["DATABASE_URL"].replace("${POSTGRES_PASSWORD:-benchlab}", "benchlab")

    config = _database_config(url)

    assert config["HOST"] == "postgres" and config["NAME"] == "benchlab"
    assert environment["REDIS_URL"].startswith("redis://redis:")
    assert "SECRET_KEY" in environment


def test_compose_volumes_are_declared() -> None:
    declared = set(COMPOSE["volumes"])
    for service in COMPOSE["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source in declared or (ROOT / source).exists(), source


def test_every_path_the_dockerfile_copies_exists() -> None:
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:  # not what an earlier stage made
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source


def test_ci_runs_make_test() -> None:
    ci = (ROOT / ".ci/run").read_text()

    assert "make test" in ci and "set -e" in ci
    assert os.access(ROOT / ".ci/run", os.X_OK)


@pytest.mark.parametrize("requirements", ["requirements.txt", "requirements-dev.txt"])
def test_every_python_dependency_is_pinned_exactly(requirements: str) -> None:
    lines = [line.split("#")[0].strip() for line in (ROOT / requirements).read_text().splitlines()]
    pins = [line for line in lines if line]

    assert pins
    for pin in pins:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", pin), pin


def test_the_vendored_chartjs_is_version_4_with_its_licence() -> None:
    script = ROOT / "static" / CHARTJS_PATH

    assert CHARTJS_VERSION.startswith("4.")
    assert f"Chart.js v{CHARTJS_VERSION}" in script.read_text()[:200]
    assert "MIT License" in (script.parent / "LICENSE.md").read_text()
