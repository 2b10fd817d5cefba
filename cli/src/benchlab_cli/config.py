"""Where the command finds benchlab and its token: the command line, then the environment
(BENCHLAB_URL, BENCHLAB_TOKEN), then a TOML file (--config PATH, else
$XDG_CONFIG_HOME/benchlab/config.toml or ~/.config/benchlab/config.toml) with `url` and `token`."""

import os
import stat
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from benchlab_cli.errors import UsageError

HOW_TO_SET = (
    'set {env} in the environment, pass {flag}, or put `{key} = "..."` in {path}'  # said whenever one is missing
)


@dataclass(frozen=True)
class Config:
    url: str  # without a trailing slash: http://127.0.0.1:8000
    token: str


def default_config_path(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "benchlab" / "config.toml"


def read_config_file(path: Path, required: bool) -> dict[str, str]:
    """The file's `url` and `token`; {} when the default file does not exist. A file named with
    --config must exist; a file that is not TOML, or has other keys or non-text values, is refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise UsageError(f"the configuration file {path} does not exist") from None
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read the configuration file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"url", "token"})
    if unknown:
        raise UsageError(f"{path}: unknown key(s) {', '.join(unknown)}; it may have `url` and `token`")
    for key, value in data.items():
        if not isinstance(value, str):
            raise UsageError(f"{path}: `{key}` must be a string in quotes, not {type(value).__name__}")
    _warn_if_others_can_read(path, "token" in data)
    return dict(data)


def _warn_if_others_can_read(path: Path, holds_token: bool) -> None:
    # A token is a password: say so when the file holding one is readable by others (as ssh does).
    if holds_token and path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
        print(f"benchlab: warning: {path} holds a token and others can read it (chmod 600 {path})", file=sys.stderr)


def resolve_config(
    *, url: str | None, token: str | None, config_path: str | None, environ: Mapping[str, str] | None = None
) -> Config:
    """The URL and token to use: each from the first of the command line, the environment and the file."""
    env = os.environ if environ is None else environ
    path = Path(config_path).expanduser() if config_path else default_config_path(env)
    from_file = read_config_file(path, required=bool(config_path))
    found_url = url or env.get("BENCHLAB_URL") or from_file.get("url")
    found_token = token or env.get("BENCHLAB_TOKEN") or from_file.get("token")
    if not found_url:
        raise UsageError(
            "no benchlab URL: " + HOW_TO_SET.format(env="BENCHLAB_URL", flag="--url", key="url", path=path)
        )
    if not found_token:
        raise UsageError(
            "no API token: "
            + HOW_TO_SET.format(env="BENCHLAB_TOKEN", flag="--token", key="token", path=path)
            + " (make one at /tokens/ in benchlab, or with `manage.py token_create --user NAME --name NAME`)"
        )
    return Config(url=checked_url(found_url), token=found_token.strip())


def checked_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"the benchlab URL must look like http(s)://host[:port], not {url!r}")
    return url.strip().rstrip("/")
