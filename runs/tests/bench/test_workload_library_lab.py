"""The workload library's shipped scripts under real pgbench on the virtual lab: each runs on a
throw-away cluster loaded by pgbench -i, and its parameters demonstrably reach pgbench (counted
in the tables it writes). One cluster for the module, a fixed number of transactions (-t) per
pgbench, so the counts are exact; and one run through the worker, as a queued run takes it."""

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from runs.lab.host.run_user import ensure_run_user, run_as_run_user
from runs.lab.pgbench.commands import Connection, InitOptions, create_database_command, init_command
from runs.lab.pgbench.library import rendered_script
from runs.lab.pgbench.library.shipped import SHIPPED
from runs.lab.postgres.cluster import SUPERUSER, Cluster, psql, throwaway_cluster
from runs.lab.storage.prepare import FilesystemSpec, prepared_storage
from runs.lab.transport.ssh import SSHTransport
from runs.models import Host, RunState, Workload, WorkloadScript
from runs.tests.bench.test_run_execution import lab_inventory as lab_inventory  # a fixture
from runs.tests.bench.test_run_execution import new_run
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN, VirtualLab
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker

pytestmark = pytest.mark.lab
CLIENTS, EACH = 2, 50  # pgbench -c 2 -t 50: 100 transactions a pgbench
SCRIPTS = {shipped.name: shipped for shipped in SHIPPED}


@dataclass(frozen=True)
class Bench:
    transport: SSHTransport
    cluster: Cluster
    connection: Connection
    script_path: str

    def sql(self, query: str) -> str:
        return psql(self.transport, self.cluster, query, database=self.connection.database)

    def run(self, name: str, **params: float) -> str:
        """The shipped script `name` with these parameters, as a run would render it, under pgbench."""
        shipped = SCRIPTS[name]
        text = rendered_script(f"{name} v{shipped.version}", shipped.script, shipped.parameters, params)
        self.transport.write_file(self.script_path, text.encode(), mode=0o644)
        argv = [f"{PG_BIN}/pgbench", "-n", "-f", self.script_path, "-c", str(CLIENTS), "-j", "1", "-t", str(EACH)]
        out = run_as_run_user(self.transport, [*argv, *self.connection.args(), self.connection.database], timeout=60)
        assert f"number of transactions actually processed: {CLIENTS * EACH}/{CLIENTS * EACH}" in out.stdout, out
        return out.stdout


@pytest.fixture(scope="module")
def bench(virtual_lab: VirtualLab) -> Iterator[Bench]:
    """A scale-1 pgbench database on a throw-away cluster on lab1's RAM disk, for the module."""
    transport = virtual_lab.connect("lab1")
    ensure_run_user(transport)
    try:
        with prepared_storage(transport, virtual_lab.disk("lab1", "ram"), FilesystemSpec("ext4"), "library") as storage:
            with throwaway_cluster(transport, PG_BIN, f"{storage.mountpoint}/pg", {}, (), storage.own_pids) as cluster:
                connection = Connection(host=cluster.socket_dir, port=cluster.port, database="bench", user=SUPERUSER)
                run_as_run_user(transport, create_database_command(PG_BIN, connection, SUPERUSER))
                run_as_run_user(transport, init_command(PG_BIN, connection, InitOptions(scale=1)), timeout=120)
                bench = Bench(transport, cluster, connection, f"{storage.mountpoint}/script.pgbench")
                yield bench
                transport.run(["rm", "-f", bench.script_path])
    finally:
        transport.close()


def history(bench: Bench, query: str = "count(*)") -> str:
    return bench.sql(f"SELECT {query} FROM pgbench_history")  # noqa: S608 - the tests' own constants


def test_insert_only_appends_its_rows_per_transaction(bench: Bench) -> None:
    bench.sql("TRUNCATE pgbench_history")
    bench.run("insert-only", rows=3)

    assert int(history(bench)) == 3 * CLIENTS * EACH


def test_read_mostly_writes_as_often_as_its_read_percent_says(bench: Bench) -> None:
    bench.sql("TRUNCATE pgbench_history")
    bench.run("read-mostly", read_percent=100)
    only_reads = int(history(bench))
    bench.run("read-mostly", read_percent=0)

    assert only_reads == 0
    assert int(history(bench)) == CLIENTS * EACH  # every transaction the TPC-B-like update


def test_write_heavy_updates_as_many_accounts_as_asked(bench: Bench) -> None:
    bench.sql("TRUNCATE pgbench_history")
    before = int(bench.sql("SELECT sum(abalance) FROM pgbench_accounts"))
    bench.run("write-heavy", accounts=5)
    after = int(bench.sql("SELECT sum(abalance) FROM pgbench_accounts"))

    # Each transaction adds its delta (kept in its history row) to 5 accounts.
    assert after - before == 5 * int(history(bench, "sum(delta)"))
    assert int(history(bench)) == CLIENTS * EACH


@pytest.mark.parametrize(
    ("name", "low", "high", "most_distinct"),
    [("skewed-zipfian", 1.001, 8, 10), ("skewed-exponential", 0.001, 200, 100)],
)
def test_a_higher_skew_concentrates_the_updates_on_the_first_accounts(
    bench: Bench, name: str, low: float, high: float, most_distinct: int
) -> None:
    spread = {}
    for skew in (low, high):
        bench.sql("TRUNCATE pgbench_history")
        bench.run(name, skew=skew)
        spread[skew] = [int(v) for v in history(bench, "count(DISTINCT aid), max(aid)").split("|")]

    # 100 draws over 100,000 accounts: at the low skew, mostly different accounts up to the last
    # ones; at the high one, the first accounts only (zipfian: a handful; exponential: about the
    # first 200,000 / skew).
    assert spread[low][0] >= 40 and spread[low][1] > 50_000, spread
    assert spread[high][0] <= most_distinct and spread[high][1] < 5_000, spread


def test_the_tpcc_like_mix_orders_as_many_lines_as_allowed_and_pays(bench: Bench) -> None:
    bench.sql("TRUNCATE pgbench_history")
    bench.run("tpcc-like", max_lines=5)
    lines = "SELECT count(*) AS n FROM pgbench_history WHERE filler = 'new-order' GROUP BY tid, mtime"
    orders_sql = f"SELECT min(n), max(n), count(*) FROM ({lines}) AS orders"  # noqa: S608 - constants
    shortest, longest, orders = bench.sql(orders_sql).split("|")
    payments = int(history(bench, "count(*) FILTER (WHERE filler = 'payment')"))

    assert (shortest, longest) == ("5", "5")  # random(5, :max_lines) with max_lines 5
    # 45% new orders and 43% payments of 100 transactions: far from none, far from all.
    assert 20 <= int(orders) <= 70 and 20 <= payments <= 70, (orders, payments)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_queued_run_with_a_library_workload_runs_the_script_with_its_parameters(
    celery_worker: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    run = new_run(lab_inventory["lab1"], make_user("otto", "operator"), workload=Workload.LIBRARY,
                  library_script=script, workload_params={"skew": 2.5}, duration_s=2, warmup_s=0)  # fmt: skip
    run = wait_until_finished(run)

    assert run.state == RunState.DONE, (run.error, run.failed_output)
    assert run.workload_params == {"skew": 2.5}
    assert run.script_as_run.startswith("-- benchlab workload library: skewed-zipfian v1")
    assert "\n\\set skew 2.5\n" in run.script_as_run and script.script in run.script_as_run
    assert " -f " in run.environment["pgbench"]["command"] and run.tps and run.tps > 0
