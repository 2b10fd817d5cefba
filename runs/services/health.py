"""Liveness of what benchlab depends on: its database, Redis, and Celery workers."""

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
    return f"{len(workers)} worker(s): {', '.join(workers)}"


CHECKS: dict[str, Callable[[], str]] = {
    "database": _check_database,
    "redis": _check_redis,
    "celery workers": _check_celery_workers,
}


def health_report(components: Iterable[str] = CHECKS) -> HealthReport:
    return HealthReport(components=[_timed(name, CHECKS[name]) for name in components])
