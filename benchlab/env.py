"""Strict readers for settings that come from the environment.

Every reader raises ImproperlyConfigured on a value it cannot interpret, so a typo
in a deployment fails at start-up instead of silently falling back to a default.
"""

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use one of 1/0, true/false, yes/no, on/off)")


def env_seconds(name: str, default: float, *, low: float, high: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # also false for nan
        raise ImproperlyConfigured(f"{name}={raw!r} must be a number of seconds from {low:g} to {high:g}")
    return value


def env_count(name: str, default: int, *, low: int, high: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = int(raw) if raw.strip().isascii() and raw.strip().isdecimal() else low - 1
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name}={raw!r} must be a whole number from {low} to {high}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}={raw!r} has an empty item; separate values with single commas")
    return items


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def env_networks(name: str) -> tuple[IPNetwork, ...]:
    """Addresses and networks, comma-separated (10.0.0.5, 10.0.0.0/24, ::1); none when unset or empty."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return ()
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name}={raw!r}: {item!r} is not an address or network ({exc}); "
                "give addresses or networks separated by commas, e.g. 10.0.0.5,192.0.2.0/24,::1"
            ) from exc
    return tuple(networks)


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    scheme, sep, _rest = raw.partition("://")
    if not sep or scheme not in schemes:
        raise ImproperlyConfigured(f"{name}={raw!r} must be a URL starting with one of {', '.join(schemes)}://")
    try:
        urlsplit(raw).port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} has a bad port: {exc}") from exc
    return raw


def env_optional_secret(name: str, local_file: Path) -> str | None:
    """Like env_secret, but None when neither is there; set-but-empty is still an error."""
    raw = os.environ.get(name)
    if raw is not None and not raw.strip():
        raise ImproperlyConfigured(f"{name} is set but empty; unset it to use {local_file}, or give a value")
    if raw is None and local_file.exists():
        raw = local_file.read_text().strip()
    return raw or None


def env_secret(name: str, local_file: Path) -> str:
    """A secret from the environment, else from an untracked local file written by `make run`."""
    raw = os.environ.get(name)
    if raw is None and local_file.exists():
        raw = local_file.read_text().strip()
    if not raw:
        raise ImproperlyConfigured(
            f"{name} is not set and {local_file} does not exist: set {name} or run `make run` once to generate it"
        )
    return raw
