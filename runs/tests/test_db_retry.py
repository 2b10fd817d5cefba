"""with_database_retry against real broken connections: the test's own backend is terminated
by PostgreSQL (what a restart does to every client), and the write is done again on a new one."""

import logging

import pytest
from django.db import OperationalError, connection, connections

from runs.models import Host
from runs.services.db_retry import with_database_retry
from runs.tests.factories import make_host

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def terminate_my_connection() -> None:
    """End this process's database session from another session, as a server restart does."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()


def test_a_write_on_a_connection_the_server_ended_is_done_again_on_a_new_one(caplog: pytest.LogCaptureFixture) -> None:
    host = make_host()
    terminate_my_connection()
    with pytest.raises(OperationalError):  # what an unprotected write meets
        Host.objects.filter(pk=host.pk).update(name="before")
    connection.close()
    terminate_my_connection()

    with caplog.at_level(logging.WARNING):
        updated = with_database_retry(lambda: Host.objects.filter(pk=host.pk).update(name="after"), "renaming")

    assert updated == 1 and Host.objects.get(pk=host.pk).name == "after"
    assert "renaming: benchlab's database is unreachable" in caplog.text


def test_it_gives_up_after_its_time_and_raises_the_error() -> None:
    calls = []

    def always_down() -> None:
        calls.append(1)
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError, match="connection refused"):
        with_database_retry(always_down, "writing", retry_for_s=1.0)
    assert 2 <= len(calls) <= 3  # 0.5 s, then 1 s would pass the deadline
