"""Settings come from the environment and a bad value stops benchlab at start-up."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from benchlab.env import env_bool, env_list, env_secret, env_url

PRINT_DATABASE_NAME = (
    "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['NAME'])"
)


def start_django(
    env: dict[str, str], unset: tuple[str, ...] = (), code: str = PRINT_DATABASE_NAME
) -> subprocess.CompletedProcess[str]:
    """Import the settings in a fresh interpreter, as `manage.py` or uvicorn would, and run `code`."""
    inherited = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=inherited | {"DJANGO_SETTINGS_MODULE": "benchlab.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "env, complaint",
    [
        ({"DEBUG": "perhaps"}, "DEBUG='perhaps' is not a boolean"),
        ({"DATABASE_URL": "mysql://root@localhost/benchlab"}, "must be a postgres:// or postgresql:// URL"),
        ({"DATABASE_URL": "postgres://benchlab@localhost:notaport/benchlab"}, "cannot be parsed"),
        ({"DATABASE_URL": "postgres://benchlab@localhost:5432/"}, "names no database"),
        ({"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL='http://127.0.0.1:6379' must be a URL"),
        ({"ALLOWED_HOSTS": "benchlab.example,,localhost"}, "has an empty item"),
        ({"CREDENTIALS_KEY": "not-a-fernet-key"}, "CREDENTIALS_KEY is not a valid Fernet key"),
        ({"CREDENTIALS_KEY": ""}, "CREDENTIALS_KEY is set but empty"),
        ({"REDIS_URL": "redis://127.0.0.1:notaport/0"}, "has a bad port"),
        ({"BENCHLAB_TRUSTED_PROXIES": "10.0.0.1,proxy.lab"}, "'proxy.lab' is not an address or network"),
        ({"BENCHLAB_TRUSTED_PROXIES": "10.0.0.5/24"}, "'10.0.0.5/24' is not an address or network"),
        ({"BENCHLAB_TRUSTED_PROXIES": "10.0.0.1,,::1"}, "has an empty item"),
        ({"BENCHLAB_CLIENT_IP_HEADER": "X-Real-IP"}, "BENCHLAB_TRUSTED_PROXIES is empty"),
        ({"BENCHLAB_MAX_STREAMS_PER_USER": "0"}, "BENCHLAB_MAX_STREAMS_PER_USER='0' must be a whole number from 1"),
        ({"BENCHLAB_MAX_STREAMS_PER_USER": "８"}, "BENCHLAB_MAX_STREAMS_PER_USER='８' must be a whole number from 1"),
        ({"BENCHLAB_MAX_STREAMS_PER_USER": "8.5"}, "BENCHLAB_MAX_STREAMS_PER_USER='8.5' must be a whole number"),
        ({"BENCHLAB_STREAM_MAX_AGE_S": "0"}, "BENCHLAB_STREAM_MAX_AGE_S='0' must be a number of seconds from 1"),
        ({"BENCHLAB_PG_TARBALL_DIR": "pg-tarballs"}, "BENCHLAB_PG_TARBALL_DIR='pg-tarballs': give an absolute"),
        ({"BENCHLAB_PG_TARBALL_DIR": "/"}, "BENCHLAB_PG_TARBALL_DIR='/': give an absolute directory path other than /"),
        ({"BENCHLAB_PG_TARBALL_DIR": "/srv/a/../etc"}, "without '.', '..', '//' or a trailing '/'"),
        ({"BENCHLAB_PG_TARBALL_DIR": "/srv/tar balls"}, "of letters, digits and"),
        ({"BENCHLAB_SITE_URL": "benchlab.example.org"}, "BENCHLAB_SITE_URL='benchlab.example.org' must be a URL"),
        ({"BENCHLAB_SITE_URL": "https://"}, "give the site's address alone, e.g. https://benchlab.example.org"),
        ({"BENCHLAB_SITE_URL": "https://b.example.org/?x=1"}, "give the site's address alone"),
    ],
)
def test_a_bad_value_stops_start_up_with_a_clear_message(env: dict[str, str], complaint: str) -> None:
    result = start_django(env)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert complaint in result.stderr


def test_a_missing_secret_key_stops_start_up_and_says_how_to_fix_it(tmp_path: Path) -> None:
    result = start_django({"BENCHLAB_VAR_DIR": str(tmp_path)}, unset=("SECRET_KEY",))

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert "make run" in result.stderr


def test_defaults_name_the_local_benchlab_database(tmp_path: Path) -> None:
    (tmp_path / "secret_key").write_text("x" * 50)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY")}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings as s; "
         "d = s.DATABASES['default']; print(d['NAME'], d['HOST'], d['PORT'], s.REDIS_URL, s.DEBUG)"],
        cwd=settings.BASE_DIR,
        env=env | {"DJANGO_SETTINGS_MODULE": "benchlab.settings", "BENCHLAB_VAR_DIR": str(tmp_path)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["benchlab", "127.0.0.1", "5432", "redis://127.0.0.1:6379/0", "False"]


def test_env_bool_reads_the_usual_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in [("1", True), ("Yes", True), ("on", True), ("0", False), ("false", False), ("", False)]:
        monkeypatch.setenv("FLAG", raw)
        assert env_bool("FLAG", not expected) is expected
    monkeypatch.delenv("FLAG")
    assert env_bool("FLAG", True) is True


def test_env_list_splits_on_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTS", "a.example, b.example")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_env_url_accepts_only_the_given_schemes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("URL", "rediss://cache:6380/1")
    assert env_url("URL", "", schemes=("redis", "rediss")) == "rediss://cache:6380/1"
    monkeypatch.setenv("URL", "cache:6380")
    with pytest.raises(ImproperlyConfigured):
        env_url("URL", "", schemes=("redis",))


def test_env_secret_prefers_the_environment_over_the_local_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local = tmp_path / "secret"
    local.write_text("from-file\n")
    monkeypatch.delenv("SECRET", raising=False)
    assert env_secret("SECRET", local) == "from-file"
    monkeypatch.setenv("SECRET", "from-env")
    assert env_secret("SECRET", local) == "from-env"


PRINT_REDIS_URL = "import django; django.setup(); from django.conf import settings; print(settings.REDIS_URL)"


def test_a_redis_that_make_run_started_with_a_password_is_reached_with_it(tmp_path: Path) -> None:
    """scripts/start-services gives the Redis it starts a password in var/redis_password."""
    env = {"BENCHLAB_VAR_DIR": str(tmp_path), "SECRET_KEY": "k" * 50}
    (tmp_path / "redis_password").write_text("a b/c\n")
    with_password = start_django(env, unset=("REDIS_URL",), code=PRINT_REDIS_URL)
    (tmp_path / "redis_password").unlink()
    without = start_django(env, unset=("REDIS_URL",), code=PRINT_REDIS_URL)

    assert with_password.stdout.strip() == "redis://:a%20b%2Fc@127.0.0.1:6379/0", with_password.stderr
    assert without.stdout.strip() == "redis://127.0.0.1:6379/0", without.stderr
