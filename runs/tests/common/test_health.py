import pytest
from django.test import override_settings

from runs.common.services import health
from runs.tests.conftest import ClientFactory
from runs.tests.web_server import free_port
from runs.tests.workers import CeleryWorker


def component(report: health.HealthReport, name: str) -> health.ComponentHealth:
    return next(c for c in report.components if c.name == name)


@pytest.mark.django_db
def test_it_finds_the_database_and_redis_up() -> None:
    report = health.health_report(["database", "redis"])

    assert component(report, "database").ok
    assert "PostgreSQL" in component(report, "database").detail
    assert component(report, "redis").ok
    assert component(report, "redis").detail.startswith("Redis ")


@pytest.mark.django_db
def test_it_reports_redis_down_when_nothing_listens() -> None:
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        report = health.health_report(["database", "redis"])

    assert not component(report, "redis").ok
    assert "ConnectionError" in component(report, "redis").detail
    assert not report.ok


def test_it_reports_no_workers_when_none_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Unit test: the boundary (Celery's broadcast ping) answers with nobody.
    monkeypatch.setattr(health.celery_app.control, "ping", lambda **kwargs: [])

    report = health.health_report(["celery workers"])

    assert not report.ok
    assert "no Celery worker answered" in component(report, "celery workers").detail


@pytest.mark.django_db
def test_the_json_endpoint_says_ok_with_a_worker_running(
    celery_worker: CeleryWorker, client_for: ClientFactory
) -> None:
    response = client_for("vera").get("/health.json")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert {c["name"] for c in body["components"]} == {"database", "redis", "celery workers"}


@pytest.mark.django_db
def test_the_page_and_json_say_503_when_redis_is_down(client_for: ClientFactory) -> None:
    client = client_for("vera")
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        page = client.get("/health/")
        data = client.get("/health.json")

    assert page.status_code == 503
    assert "DOWN" in page.content.decode()
    assert data.status_code == 503
    assert data.json()["ok"] is False
