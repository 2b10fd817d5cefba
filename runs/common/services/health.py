"""Liveness of what benchlab depends on: its database, Redis, and Celery workers.

Two answers: the full report (versions, worker names, error messages) for people who may see the
inventory, and a public one for monitors that ask without logging in: up or down per component,
nothing that names a version, a machine, an address or an account.
"""

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import redis
from django.conf import settings
from django.db import connection

from benchlab.celery import app as celery_app

CHECK_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class ComponentHealth:
    name: str
    ok: bool
    detail: str
    elapsed_ms: float


@dataclass(frozen=True)
class HealthReport:
    components: list[ComponentHealth] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(component.ok for component in self.components)

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "components": [asdict(component) for component in self.components]}

    def as_public_dict(self) -> dict[str, object]:
        """Up or down per component, without the details: an error's text can name hosts,
        ports and database users, and versions and worker names help nobody outside."""
        return {
            "ok": self.ok,
            "components": [{"name": c.name, "ok": c.ok, "elapsed_ms": c.elapsed_ms} for c in self.components],
        }


def _timed(name: str, check: Callable[[], str]) -> ComponentHealth:
    started = time.monotonic()
    try:
        detail, ok = check(), True
    except Exception as exc:  # noqa: BLE001 - any failure is the answer we report
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return ComponentHealth(name=name, ok=ok, detail=detail, elapsed_ms=round((time.monotonic() - started) * 1000, 1))


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        (version,) = cursor.fetchone() or ("?",)
    return str(version).split(" on ")[0]


def _check_redis() -> str:
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=CHECK_TIMEOUT_SECONDS, socket_timeout=CHECK_TIMEOUT_SECONDS
    )
    try:
        client.ping()
        return f"Redis {client.info('server')['redis_version']}"
    finally:
        client.close()


def _check_celery_workers() -> str:
    replies = celery_app.control.ping(timeout=CHECK_TIMEOUT_SECONDS / 2) or []
    workers = sorted(name for reply in replies for name in reply)
    if not workers:
        raise RuntimeError("no Celery worker answered a ping")
    return f"{len(workers)} {'worker' if len(workers) == 1 else 'workers'}: {', '.join(workers)}"


CHECKS: dict[str, Callable[[], str]] = {
    "database": _check_database,
    "redis": _check_redis,
    "celery workers": _check_celery_workers,
}


def health_report(components: Iterable[str] = CHECKS) -> HealthReport:
    return HealthReport(components=[_timed(name, CHECKS[name]) for name in components])


# The public answer is computed at most this often per web process: a request for it runs in the
# thread that serves every other synchronous view, and a Celery ping waits for its timeout when no
# worker answers, so anyone polling it unauthenticated must not hold that thread.
PUBLIC_REPORT_MAX_AGE_S = 10.0


class _ReusedReport:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made_at = 0.0
        self.report: HealthReport | None = None


_public = _ReusedReport()


def public_health_report(max_age_s: float = PUBLIC_REPORT_MAX_AGE_S) -> HealthReport:
    """The full report, reused while it is younger than `max_age_s` seconds."""
    with _public.lock:
        if _public.report is None or time.monotonic() - _public.made_at > max_age_s:
            _public.report, _public.made_at = health_report(), time.monotonic()
        return _public.report


def public_health_report_forget() -> None:
    """Drop the reused report (for tests that change what the checks find)."""
    with _public.lock:
        _public.report = None
