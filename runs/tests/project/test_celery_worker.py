import pytest

from runs.common.services.health import health_report
from runs.tasks import worker_self_check
from runs.tests.workers import CeleryWorker


@pytest.mark.django_db
def test_it_runs_a_task_in_a_real_worker_process_through_redis(celery_worker: CeleryWorker) -> None:
    result = worker_self_check.apply_async(queue=celery_worker.queue)

    answer = result.get(timeout=30)

    # The prefork pool runs tasks in the worker's pool processes (as in production): not ours,
    # reading the test database through their own connection.
    assert answer["pid"] in celery_worker.pool_pids()
    assert str(answer["database"]).startswith("test_")
    assert result.state == "SUCCESS"


@pytest.mark.django_db
def test_it_reports_the_running_worker_as_alive(celery_worker: CeleryWorker) -> None:
    report = health_report()

    workers = next(component for component in report.components if component.name == "celery workers")
    assert workers.ok
    assert celery_worker.nodename in workers.detail
