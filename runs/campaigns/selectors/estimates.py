"""How long runs take: one estimator for the campaign form's preview, the campaign page's first
estimate and its time left, built from what earlier runs on the same host and device took.

A run's turn on its server host, from the previous run's end there (or its own queueing, if
later) to its own end, is cut into parts that every done run measured (its stage times, stored
in run.environment["stages"] by bench.services.results, and its timestamps):

- asked: the warm-up and duration it asked for (taken as asked, never from history);
- setup: the storage and the cluster ("storage", "cluster", "kept setup checked"), apart for a run
  that made them fresh and one that took over the setup the run before it kept (bench.services.reuse);
- load: `pgbench -i` ("load"), which grows with the scale (a reused run loads nothing);
- other: the rest of the turn: the queue handing the run over, hosts made ready, probing,
  pgbench's start, collecting, keeping, the cleanup (stop, unmount) and storing the results.

Each part is the median over the last runs of the same host and device (setup: also fresh or
reused; load: also the scale); without any, over the host's other devices; without those, the
model below. Hosts work in parallel, each host's runs one after another in queue order.
"""

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from runs.bench.specs import RunSpec
from runs.campaigns.matrix import run_order
from runs.models import DataState, Device, Run, RunState

HISTORY_RUNS = 20  # per host and device: recent enough to follow a changed lab, enough for a median
SETUP_FIELDS = (
    "device_id",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "pg_install_id",
    "scale",
)  # bench.services.reuse


@dataclass(frozen=True)
class Model:
    """A part's seconds when no run on the host has measured it: the medians of the virtual lab's
    runs (scale 1, 2 clients, 27 Nov 2026; test_estimates_lab.py) on its RAM disk (for every
    fast device) and on its HDD-like disk (5 ms per I/O); per scale unit from LAB.md's
    `pgbench -i -s 10` (~5 s on the HDD-like disk)."""

    setup_fresh_s: float
    setup_reused_s: float
    load_s: float  # at scale 1
    load_per_scale_s: float  # each further scale unit
    other_s: float


FAST = Model(setup_fresh_s=1.2, setup_reused_s=0.3, load_s=0.6, load_per_scale_s=0.2, other_s=1.5)
MODELS: dict[str, Model] = {
    Device.Kind.HDD: Model(setup_fresh_s=2.1, setup_reused_s=0.5, load_s=1.35, load_per_scale_s=0.4, other_s=5.5),
}
SETUP_STAGES = ("storage", "cluster", "kept setup checked")


@dataclass(frozen=True)
class Turn:
    """One done run's measured parts."""

    device_id: int
    scale: int
    reused: bool
    keeps: bool  # left its setup for the next run: no unmount, a short cleanup
    setup: float
    load: float
    other: float


@dataclass
class History:
    """Recent turns on some hosts, by host; device kinds for the model."""

    turns: dict[int, list[Turn]]
    kinds: dict[int, str]

    def part(self, host_id: int, device_id: int, name: str, *matches: dict[str, Any]) -> float | None:
        """The median of a part over the host and device's turns that match (the first of
        `matches` that any turn meets, the closest first); else over the host's."""
        turns = self.turns.get(host_id, [])
        for pool in ([t for t in turns if t.device_id == device_id], turns):
            for match in matches or ({},):
                values = [getattr(t, name) for t in pool if all(getattr(t, k) == v for k, v in match.items())]
                if values:
                    return statistics.median(values)
        return None

    def known(self, host_id: int) -> bool:
        return bool(self.turns.get(host_id))

    def model(self, device_id: int) -> Model:
        return MODELS.get(self.kinds.get(device_id, ""), FAST)


def history(host_ids: Iterable[int]) -> History:
    """The recent done runs with stage times on these hosts, as turns."""
    hosts = sorted(set(host_ids))
    fields = ("pk", "server_host_id", "device_id", "scale", "warmup_s", "warmup_run_s", "duration_s", "created_at",
              "started_at", "finished_at", "environment__stages", "environment__reuse")  # fmt: skip
    done = (
        Run.objects.filter(server_host_id__in=hosts, state=RunState.DONE, started_at__isnull=False)
        .filter(finished_at__isnull=False, environment__has_key="stages")
        .order_by("-finished_at")
        .values(*fields)[: HISTORY_RUNS * 4 * max(len(hosts), 1)]
    )
    rows = list(done)
    ends = _previous_ends(
        hosts, [row["started_at"] for row in rows], min((row["created_at"] for row in rows), default=None)
    )
    turns: dict[int, list[Turn]] = defaultdict(list)
    per_device: dict[int, int] = defaultdict(int)
    for row in rows:
        if per_device[row["device_id"]] >= HISTORY_RUNS:
            continue
        per_device[row["device_id"]] += 1
        turns[row["server_host_id"]].append(_turn(row, ends.get((row["server_host_id"], row["started_at"]))))
    kinds = dict(Device.objects.filter(host_id__in=hosts).values_list("pk", "kind"))
    return History(dict(turns), kinds)


def _previous_ends(
    hosts: list[int], starts: list[datetime], since: datetime | None
) -> dict[tuple[int, datetime], datetime]:
    """(host, a run's start) → the latest end of another run on that host before that start, if
    after `since` (the earliest queueing among them: an earlier end does not shorten a turn)."""
    if not starts or since is None:
        return {}
    ended = (
        Run.objects.filter(server_host_id__in=hosts, finished_at__isnull=False, finished_at__gte=since)
        .order_by("finished_at")
        .values_list("server_host_id", "finished_at")
    )
    by_host: dict[int, list[datetime]] = defaultdict(list)
    for host, end in ended:
        if end is not None:  # the query excludes them; the types do not know
            by_host[host].append(end)
    previous = {}
    for host, ends in by_host.items():
        for start in starts:
            before = [end for end in ends if end <= start]
            if before:
                previous[(host, start)] = before[-1]
    return previous


def _turn(row: dict[str, Any], previous_end: datetime | None) -> Turn:
    stages = row["environment__stages"] or {}
    reuse = row["environment__reuse"] or {}
    reused, keeps = bool(reuse.get("reused_from_run")), bool(reuse.get("kept_for_next_run"))
    began = max(row["created_at"], previous_end) if previous_end else row["created_at"]
    turn = (row["finished_at"] - began).total_seconds()
    setup = sum(float(stages.get(name, 0.0)) for name in SETUP_STAGES)
    load = float(stages.get("load", 0.0))
    asked = row["warmup_run_s"] + row["warmup_s"] + row["duration_s"]
    other = max(turn - setup - load - asked, 0.0)
    return Turn(row["device_id"], row["scale"], reused, keeps, setup, load, other)


def run_estimate(spec: RunSpec, reused: bool, past: History, keeps: bool = False) -> float:
    """Seconds a run of this spec takes on its host, start of its turn to its end: `reused`, it
    takes over its predecessor's setup; `keeps`, it leaves its own to the next run."""
    host, device, model = spec.server_host_id, spec.device_id, past.model(spec.device_id)
    setup = past.part(host, device, "setup", {"reused": reused})
    other = past.part(host, device, "other", {"reused": reused, "keeps": keeps}, {"keeps": keeps}, {})
    if reused:
        load = 0.0  # in the kept setup's cluster already
    else:
        load_here = past.part(host, device, "load", {"reused": False, "scale": spec.scale})
        load = load_here if load_here is not None else _load_from_other_scales(spec, past, model)
    fallback_setup = model.setup_reused_s if reused else model.setup_fresh_s
    return (
        spec.warmup_run_s
        + spec.warmup_s
        + spec.duration_s
        + (setup if setup is not None else fallback_setup)
        + load
        + (other if other is not None else model.other_s)
    )


def _load_from_other_scales(spec: RunSpec, past: History, model: Model) -> float:
    """The load at a scale no run here loaded: the nearest scale's time, plus the model's time
    per scale unit for the difference; with no load at all measured, the model's."""
    turns = [t for t in past.turns.get(spec.server_host_id, []) if not t.reused]
    mine = [t for t in turns if t.device_id == spec.device_id] or turns
    if not mine:
        return model.load_s + model.load_per_scale_s * (spec.scale - 1)
    nearest = min(mine, key=lambda t: abs(t.scale - spec.scale)).scale
    at_nearest = statistics.median(t.load for t in mine if t.scale == nearest)
    return max(at_nearest + model.load_per_scale_s * (spec.scale - nearest), 0.0)


def reuses(before: RunSpec | None, spec: RunSpec, fresh_database: bool) -> bool:
    """Whether a campaign's run takes over the setup its predecessor on the host kept (bench.services.reuse)."""
    one_database = spec.shared_database or len(spec.client_host_ids) <= 1
    if before is None or fresh_database or not one_database:
        return False
    if before.data_state != DataState.REUSED or spec.data_state != DataState.REUSED:
        return False
    return all(getattr(before, name) == getattr(spec, name) for name in SETUP_FIELDS)


@dataclass(frozen=True)
class WallEstimate:
    seconds: float
    basis: str


def reuse_flags(specs: Sequence[RunSpec], usable: Sequence[bool], fresh_database: bool) -> list[tuple[bool, bool]]:
    """Per run in queue order: (it reuses its predecessor's setup on its host, it keeps its own
    for the next). `usable`: the run may leave a setup (not failed or cancelled)."""
    reused = [False] * len(specs)
    last: dict[int, int] = {}
    for at, spec in enumerate(specs):
        before = last.get(spec.server_host_id)
        reused[at] = before is not None and usable[before] and reuses(specs[before], spec, fresh_database)
        last[spec.server_host_id] = at
    keeps = [False] * len(specs)
    following: dict[int, int] = {}
    for at in reversed(range(len(specs))):
        after = following.get(specs[at].server_host_id)
        keeps[at] = after is not None and reused[after]
        following[specs[at].server_host_id] = at
    return list(zip(reused, keeps, strict=True))


def queue_estimate(specs: Sequence[RunSpec], fresh_database: bool, past: History) -> dict[int, float]:
    """Server host → seconds its runs take, one after another in this order."""
    per_host: dict[int, float] = defaultdict(float)
    for spec, (reused, keeps) in zip(specs, reuse_flags(specs, [True] * len(specs), fresh_database), strict=True):
        per_host[spec.server_host_id] += run_estimate(spec, reused, past, keeps)
    return per_host


def plan_estimate(specs: Sequence[RunSpec], repetitions: int, fresh_database: bool = False) -> WallEstimate:
    """A plan's wall time: its runs in queue order (round by round, as campaign_create queues
    them; a shuffled order is not known before it is queued, and changes only what is reused)."""
    hosts = {spec.server_host_id for spec in specs}
    past = history(hosts)
    ordered = [specs[index] for index, _ in run_order(len(specs), repetitions)]
    per_host = queue_estimate(ordered, fresh_database, past)
    known = sum(1 for host in hosts if past.known(host))
    basis = (
        f"each host's runs one after another, hosts in parallel; set-up, load and the rest from the median of "
        f"the host's recent runs ({known} of {len(hosts)} host{'s' if len(hosts) != 1 else ''} "
        f"have history; a model of the device's kind for the others)"
    )
    return WallEstimate(seconds=max(per_host.values(), default=0.0), basis=basis)


def time_left(runs: Sequence[Run], fresh_database: bool) -> float | None:
    """Seconds until a campaign's last unfinished run ends, by the same estimate: each host's
    queued runs whole, a running one less what it has already taken."""
    unfinished = [run for run in runs if not run.is_finished]
    if not unfinished:
        return None
    past = history({run.server_host_id for run in unfinished})
    now = timezone.now()
    left: dict[int, float] = defaultdict(float)
    ordered = sorted(runs, key=lambda r: r.pk)
    specs = [RunSpec.from_run(run) for run in ordered]
    usable = [run.state not in (RunState.FAILED, RunState.CANCELLED) for run in ordered]
    for run, spec, (reused, keeps) in zip(ordered, specs, reuse_flags(specs, usable, fresh_database), strict=True):
        if run.is_finished:
            continue
        wall = run_estimate(spec, reused, past, keeps)
        if run.started_at:  # running: what is left of it
            wall = max(wall - (now - run.started_at).total_seconds(), 0.0)
        left[run.server_host_id] += wall
    return max(left.values())
