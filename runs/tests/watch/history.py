"""A hand-made history for the watch's tests: one configuration over 12 rounds on lab1 (odd rounds
campaigns of three repetitions, even rounds single runs), its steady tps stepping from about 1000 to
about 1100 (+10 %) at round 7, the day lab1's kernel went from 6.1.0-25 to 6.1.0-26; besides it a
configuration that ran once (8 clients) and a failed run, neither of them a series."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User

from runs.models import Device, Host, PgInstall, Run, RunState
from runs.tests.compare.test_drift_pages import PG_BIN, recorded
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.job_factories import make_campaign

START = datetime(2026, 10, 1, 2, 0, tzinfo=UTC)
# Each round's steady tps (a campaign round's repetitions are it -10, +0, +10).
ROUND_TPS = [1000.0, 1012.0, 991.0, 1005.0, 996.0, 1009.0, 1102.0, 1095.0, 1110.0, 1099.0, 1104.0, 1093.0]
STEP_ROUND = 7  # the first round at about 1100, and the first on the new kernel


@dataclass
class History:
    host: Host
    device: Device
    pg: PgInstall
    rounds: list[list[Run]]
    once: Run  # the 8-client configuration's only run


def round_at(number: int) -> datetime:
    return START + timedelta(days=number - 1)


def make_history(
    owner: User,
    rounds: list[float] = ROUND_TPS,
    step_round: int = STEP_ROUND,
    host_name: str = "lab1",
    new_kernel_from: tuple[int, int] | None = None,
) -> History:
    """`new_kernel_from`: the round and repetition (from 0) of the first run on the new kernel; by
    default the step round's first."""
    first_new = new_kernel_from or (step_round, 0)
    host = make_host(name=host_name)
    device = make_device(host, name="ssd", model="Samsung SSD 860")
    pg = make_pg_install(host, bin_dir=PG_BIN, label="PG 15 (Debian)")
    made: list[list[Run]] = []
    for number, tps in enumerate(rounds, start=1):
        campaign, configuration = make_campaign(owner, name=f"nightly {number}") if number % 2 else (None, None)
        values = [tps - 10, tps, tps + 10] if campaign else [tps]
        runs = []
        for repetition, value in enumerate(values):
            at = round_at(number) + timedelta(minutes=10 * repetition)
            kernel = "6.1.0-26-amd64" if (number, repetition) >= first_new else "6.1.0-25-amd64"
            repetition_of = {"repetition": repetition + 1} if campaign else {}
            fields: dict[str, Any] = {
                "campaign": campaign,
                "configuration": configuration,
                "random_seed": number * 10 + repetition,
            }
            fields |= {"started_at": at, "finished_at": at + timedelta(minutes=5), "environment": recorded(kernel)}
            fields |= {"steady_tps_mean": value, "tps": value, "latency_avg_ms": 2000 / value, **repetition_of}
            runs.append(make_run(host, device, pg, **fields))
        made.append(runs)
    at = round_at(3) + timedelta(hours=5)
    once = make_run(host, device, pg, clients=8, started_at=at, steady_tps_mean=1500.0, environment=recorded())
    make_run(host, device, pg, state=RunState.FAILED, started_at=at + timedelta(hours=1))
    return History(host, device, pg, made, once)
