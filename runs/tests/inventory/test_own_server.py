"""Runs on benchlab's own server: benchlab's PostgreSQL and Redis must refuse the run user.

Each service here is a real one of the test's own (a PostgreSQL cluster and a redis-server on
free ports), asked by the real run user through the local transport; the end-to-end test asks
this machine's own services independently (psql and redis-cli as that user) and expects the run
to go the way they answer."""

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from runs.lab.errors import LabError
from runs.lab.host.own_services import (
    POSTGRESQL,
    REDIS,
    ServiceAddress,
    ask_as_run_user,
    assert_services_refuse_run_user,
)
from runs.lab.host.run_user import RUN_USER, ensure_run_user, run_as_run_user
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.waiting import wait_until
from runs.models import AuditAction, AuditEvent, Host, RunState
from runs.tests.bench.test_run_execution import new_run
from runs.tests.factories import make_user
from runs.tests.waits import wait_until_finished
from runs.tests.web_server import answers, free_port
from runs.tests.workers import CeleryWorker

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass
class PrivateCluster:
    """A PostgreSQL cluster of the test's own, as the postgres OS user, on a free port."""

    directory: Path
    port: int

    @property
    def socket(self) -> str:
        return f"{self.directory}/.s.PGSQL.{self.port}"

    def addresses(self) -> list[ServiceAddress]:
        return [
            ServiceAddress(kind=POSTGRESQL, host="127.0.0.1", port=self.port, user="postgres", database="postgres"),
            ServiceAddress(kind=POSTGRESQL, socket=self.socket, user="postgres", database="postgres"),
        ]

    def authenticate_with(self, method: str) -> None:
        """pg_hba.conf with every line asking `method` (trust, scram-sha-256, peer), reloaded."""
        hba = f"local all all {'peer' if method == 'scram-sha-256' else method}\nhost all all 127.0.0.1/32 {method}\n"
        (self.directory / "data" / "pg_hba.conf").write_text(hba)
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.directory / "data"), "reload", "-s"])


def _as_postgres(argv: list[str]) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *argv], cwd="/", check=True, capture_output=True)


@pytest.fixture
def private_cluster() -> Iterator[PrivateCluster]:
    directory = Path(tempfile.mkdtemp(prefix="benchlab-test-pg-", dir="/var/tmp"))
    shutil.chown(directory, "postgres", "postgres")
    directory.chmod(0o755)  # like /var/run/postgresql: any local user reaches the socket
    cluster = PrivateCluster(directory, free_port())
    data = str(directory / "data")
    _as_postgres([str(PG_BIN / "initdb"), "-D", data, "-A", "trust", "--no-sync", "-U", "postgres"])
    options = f"-p {cluster.port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
    _as_postgres([str(PG_BIN / "pg_ctl"), "-D", data, "-o", options, "-l", f"{directory}/log", "-w", "start"])
    try:
        yield cluster
    finally:
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(directory)


@contextmanager
def private_redis(password: str | None) -> Iterator[ServiceAddress]:
    """A redis-server of the test's own on a free port; its password, if any, in its config file."""
    port = free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as conf:
        conf.write(f'bind 127.0.0.1\nport {port}\nsave ""\nappendonly no\n')
        conf.write(f"requirepass {password}\n" if password else "")
    process = subprocess.Popen(["redis-server", conf.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: answers("127.0.0.1", port), 10, 0.05), "redis-server did not start"
        yield ServiceAddress(kind=REDIS, host="127.0.0.1", port=port)
    finally:
        process.send_signal(signal.SIGKILL)  # by PID: the test's own process
        process.wait()
        os.unlink(conf.name)


@pytest.fixture
def transport() -> LocalTransport:
    local = LocalTransport(label="this-machine")
    ensure_run_user(local)
    return local


def test_the_run_user_gets_into_a_trusting_postgresql_and_an_open_redis(
    transport: LocalTransport, private_cluster: PrivateCluster
) -> None:
    with private_redis(password=None) as redis:
        answers_ = ask_as_run_user(transport, [*private_cluster.addresses(), redis])
        with pytest.raises(LabError) as refused:
            assert_services_refuse_run_user(transport, [*private_cluster.addresses(), redis])

    assert [answer.verdict for answer in answers_] == ["open", "open", "open"]
    message = str(refused.value)
    assert f"PostgreSQL at 127.0.0.1:{private_cluster.port} (role postgres, database postgres)" in message
    assert f"Redis at 127.0.0.1:{redis.port}" in message and f"let {RUN_USER} in without a password" in message
    assert "pg_hba.conf: scram-sha-256" in message and "requirepass" in message and "REDIS_URL" in message


def test_password_protected_services_refuse_the_run_user_and_the_run_may_go_on(
    transport: LocalTransport, private_cluster: PrivateCluster
) -> None:
    private_cluster.authenticate_with("scram-sha-256")
    with private_redis(password="a-secret-the-run-user-lacks") as redis:
        answers_ = ask_as_run_user(transport, [*private_cluster.addresses(), redis])
        assert_services_refuse_run_user(transport, [*private_cluster.addresses(), redis])  # no exception

    assert [answer.verdict for answer in answers_] == ["closed", "closed", "closed"]
    assert answers_[0].detail == "asked for a password"
    assert "no pg_hba.conf entry" in answers_[1].detail or "authentication failed" in answers_[1].detail
    assert "NOAUTH" in answers_[2].detail


def test_only_the_one_service_that_trusts_is_named(transport: LocalTransport, private_cluster: PrivateCluster) -> None:
    private_cluster.authenticate_with("scram-sha-256")
    with private_redis(password=None) as redis, pytest.raises(LabError) as refused:
        assert_services_refuse_run_user(transport, [*private_cluster.addresses(), redis])

    assert "PostgreSQL at" not in str(refused.value) and "pg_hba" not in str(refused.value)
    assert f"Redis at 127.0.0.1:{redis.port}" in str(refused.value)


def test_a_service_that_is_not_there_is_not_taken_for_one_that_lets_the_user_in(transport: LocalTransport) -> None:
    nothing = ServiceAddress(kind=REDIS, host="127.0.0.1", port=free_port())

    [answer] = ask_as_run_user(transport, [nothing])

    assert answer.verdict == "unreachable" and "refused" in answer.detail.lower()


def _this_machines_services_let_the_run_user_in(transport: LocalTransport) -> bool:
    """Asked with the services' own clients, not with the code under test."""
    ensure_run_user(transport)
    psql = [str(PG_BIN / "psql"), "-w", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-c", "select 1"]
    postgres = run_as_run_user(transport, psql, check=False)
    redis = run_as_run_user(transport, ["redis-cli", "-h", "127.0.0.1", "ping"], check=False)
    return postgres.exit_status == 0 or "PONG" in redis.stdout


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_on_this_machine_goes_only_where_its_services_refuse_the_run_user(
    celery_worker: CeleryWorker, transport: LocalTransport
) -> None:
    """The first minute after `make run`: this machine, its own directory, no lab. On a machine
    whose PostgreSQL or Redis trusts local users (as these test machines' do) the run is refused
    before its storage is touched, naming the fix; where they ask for passwords, it runs."""
    said = StringIO()
    call_command("register_local_host", "--allow-runs", stdout=said)
    host = Host.objects.get(name="this-machine")
    device = host.devices.get(name="local-dir")
    run = new_run(host, make_user("otto", "operator"), device=device, filesystem="directory", mount_options="",
                  duration_s=3, warmup_s=0, clients=1)  # fmt: skip
    open_to_the_run_user = _this_machines_services_let_the_run_user_in(transport)

    run = wait_until_finished(run)

    leftovers = [p for p in Path(device.path).iterdir() if p.name.startswith("benchlab-")]
    assert not leftovers, "run directory left"
    if open_to_the_run_user:
        assert "Runs on this machine will be refused: a run on this-machine" in said.getvalue()
        assert run.state == RunState.FAILED
        assert "benchlab's own server" in run.error and "without a password" in run.error and "Fix:" in run.error
        states = list(run.transitions.values_list("state", flat=True))
        assert RunState.INITIALIZING_DATABASE not in states, states
        assert not AuditEvent.objects.filter(action=AuditAction.DEVICE_FORMATTED).exists()
    else:
        assert "will be refused" not in said.getvalue()
        assert run.state == RunState.DONE, (run.error, run.failed_output)
        assert run.tps and run.tps > 0 and run.samples.count() >= 2
        assert run.environment["filesystem"]["type"] == "directory"
