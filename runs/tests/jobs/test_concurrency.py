"""Many runs at once: 20 runs queued together for two lab hosts, some of them using both (a
client host), driven by four prefork worker processes as in production. From the recorded
timestamps: no host ever ran two runs at once, every run finished, and on each host the runs
started in the order they were queued; the two hosts worked in parallel."""

import itertools
from collections import defaultdict
from collections.abc import Iterator

import pytest
from django.conf import LazySettings
from django.contrib.auth.models import User

from runs.bench.services.runs import runs_enqueue
from runs.models import Host, Run, RunState
from runs.tests.bench.test_run_execution import lab_inventory
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN
from runs.tests.waits import wait_until_finished
from runs.tests.workers import CeleryWorker, own_worker

__all__ = ["lab_inventory"]  # a fixture, used by name
pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def four_workers(settings: LazySettings) -> Iterator[CeleryWorker]:
    with own_worker(settings, concurrency=4) as worker:
        yield worker


def short_run(server: Host, client: Host | None, user: User) -> Run:
    return Run(
        server_host=server, device=server.devices.get(name="ram"),
        pg_install=server.pg_installs.get(bin_dir=PG_BIN), filesystem="ext4", scale=1, clients=1, threads=1,
        duration_s=1, warmup_s=0, log_sampling_rate=None, queued_by=user, settle_s=0,
    )  # fmt: skip


def test_ten_runs_on_two_hosts_never_overlap_on_a_host_and_start_in_queue_order(
    four_workers: CeleryWorker, lab_inventory: dict[str, Host]
) -> None:
    lab1, lab2 = lab_inventory["lab1"], lab_inventory["lab2"]
    # A mix in one queue: lab1 alone, lab2 alone, and lab1 serving pgbench on lab2 (both hosts);
    # twice, so that each host has six runs to keep apart and in order (20 took 65 s of the suite).
    pattern = [(lab1, None), (lab2, None), (lab1, lab2), (lab2, None), (lab1, None)] * 2
    otto = make_user("otto", "operator")
    runs = runs_enqueue(
        runs=[short_run(server, client, otto) for server, client in pattern],
        client_host_ids=[[client.pk] if client else [] for _, client in pattern],
    )

    finished = [wait_until_finished(run, timeout=600) for run in runs]

    assert [r.state for r in finished] == [RunState.DONE] * len(pattern), [(r.pk, r.error) for r in finished if r.error]
    by_host: dict[int, list[Run]] = defaultdict(list)
    for run in finished:
        for host in run.hosts:
            by_host[host.pk].append(run)
    for host_runs in by_host.values():
        spans = sorted((r.started_at, r.finished_at, r.pk) for r in host_runs if r.started_at and r.finished_at)
        assert len(spans) == len(host_runs)
        for (_, end, earlier), (start, _, later) in itertools.pairwise(spans):
            assert start >= end, f"runs {earlier} and {later} held one host at once"
        started_order = [pk for _, _, pk in spans]
        assert started_order == sorted(started_order), "a run overtook one queued before it"
    assert Host.objects.filter(claimed_by__isnull=False).count() == 0
    # And the hosts worked in parallel: some lab1-only run overlapped some lab2-only run.
    alone = {h.pk: [r for r in finished if r.hosts == [h]] for h in (lab1, lab2)}
    assert any(
        a.started_at < b.finished_at and b.started_at < a.finished_at  # type: ignore[operator]
        for a in alone[lab1.pk]
        for b in alone[lab2.pk]
    ), "runs on different hosts never ran at the same time"
