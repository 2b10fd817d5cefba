"""The home page's reads, each in a fixed number of queries whatever the lab's size: recent runs and
campaigns (the reader's own first), what each host is doing now and what waits for it, and whom
to ask for a role.

A handful of each, not lists: the run, campaign, build and baseline lists are the full views."""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db.models import Count, Min, Q, QuerySet

from runs.common.roles import ADMIN_SITE_PERMISSION
from runs.jobs.kinds import BASELINE, BUILD, KINDS, RUN
from runs.models import FINAL_STATES, Campaign, DeviceBaseline, Host, PgBuild, Run, RunClient, RunState

RECENT = 5  # of one's own, and as many of everybody else's
ASK_AT_MOST = 3  # admins named as the ones to ask for a role

# A row of the recent runs needs none of the results' JSON.
_HEAVY = ("summary", "metrics", "os_means", "environment", "custom_script", "script_as_run", "failed_output")


@dataclass(frozen=True)
class Recent:
    """The reader's own newest, then everybody else's: each list at most RECENT long."""

    mine: list[Any]
    others: list[Any]

    @property
    def any(self) -> bool:
        return bool(self.mine or self.others)


def _own_first(rows: QuerySet[Any], owner: str, user: Any) -> Recent:
    if not user.is_authenticated:
        return Recent([], list(rows[:RECENT]))
    return Recent(list(rows.filter(**{owner: user.pk})[:RECENT]), list(rows.exclude(**{owner: user.pk})[:RECENT]))


def recent_runs(user: Any) -> Recent:
    """The newest runs `user` queued and the newest of others' (two queries)."""
    runs = Run.objects.select_related("server_host", "device", "queued_by", "campaign").defer(*_HEAVY)
    return _own_first(runs.order_by("-created_at", "-id"), "queued_by_id", user)


@dataclass(frozen=True)
class CampaignRow:
    campaign: Campaign
    total: int
    finished: int
    failed: int
    running: int


def recent_campaigns(user: Any) -> Recent:
    """The newest campaigns `user` made and the newest of others', with their runs counted by state
    (three queries)."""
    campaigns = Campaign.objects.select_related("created_by").only(
        "pk", "name", "created_at", "created_by__username", "schedule_id", "schedule_round"
    )
    found = _own_first(campaigns.order_by("-created_at", "-id"), "created_by_id", user)
    shown = [*found.mine, *found.others]
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    by_state = Run.objects.filter(campaign__in=shown).values_list("campaign_id", "state").annotate(n=Count("id"))
    for campaign_id, state, n in by_state:
        counts[campaign_id][state] = n

    def row(campaign: Campaign) -> CampaignRow:
        states = counts[campaign.pk]
        finished = sum(states.get(state, 0) for state in FINAL_STATES)
        total = sum(states.values())
        return CampaignRow(
            campaign, total, finished, states.get(RunState.FAILED, 0), total - finished - states.get(RunState.QUEUED, 0)
        )

    return Recent([row(c) for c in found.mine], [row(c) for c in found.others])


@dataclass(frozen=True)
class HostNow:
    """What a host is doing now (the job holding it: `host.claimed_by*`) and what waits for it."""

    host: Host
    waiting: int  # queued jobs of every kind that need this host and hold no host yet
    next_kind: str  # run, build or baseline; "" when nothing waits
    next_job: Any  # the first of them in the queue's order, or None

    @property
    def next_url_name(self) -> str:
        return f"{self.next_kind}-detail"


def hosts_now(hosts: Sequence[Host]) -> list[HostNow]:
    """For each host (read with its claims: runs.bench.selectors.run_page.inventory_hosts and
    claimed_by), the jobs waiting for it and the first of them: seven queries at most, however
    many hosts and jobs (counts and firsts are aggregated per host, then the firsts read at once)."""
    waiting: dict[int, int] = defaultdict(int)
    firsts: dict[int, list[tuple[str, int]]] = defaultdict(list)  # host → (kind, first job id) per kind
    runs = KINDS[RUN].waiting()
    per_host = (
        (RUN, _counted(runs, "server_host_id", "id")),
        (RUN, _counted(RunClient.objects.filter(run__in=runs), "host_id", "run_id")),  # clients wait too
        (BUILD, _counted(KINDS[BUILD].waiting(), "host_id", "id")),
        (BASELINE, _counted(KINDS[BASELINE].waiting(), "host_id", "id")),
    )
    for kind, rows in per_host:
        for host_id, n, first in rows:
            waiting[host_id] += n
            firsts[host_id].append((kind, first))
    jobs = _jobs_by_kind(first for found in firsts.values() for first in found)
    now = []
    for host in hosts:
        candidates = [(kind, jobs[kind][pk]) for kind, pk in firsts.get(host.pk, []) if pk in jobs[kind]]
        # The dispatcher takes jobs in the order they were queued, whatever their kind.
        kind, job = min(candidates, key=lambda found: (found[1].created_at, found[1].pk), default=("", None))
        now.append(HostNow(host, waiting.get(host.pk, 0), kind, job))
    return now


def _counted(rows: QuerySet[Any], host: str, job: str) -> QuerySet[Any]:
    """(host id, how many, the first job's id) per host of `rows`: one grouped query."""
    return rows.values(host).annotate(n=Count(job), first=Min(job)).values_list(host, "n", "first")


def _jobs_by_kind(found: Iterable[tuple[str, int]]) -> dict[str, dict[int, Any]]:
    """The jobs named (kind, id), read with what a line about each shows: a query per kind named."""
    ids: dict[str, set[int]] = defaultdict(set)
    for kind, pk in found:
        ids[kind].add(pk)
    reads: dict[str, QuerySet[Any]] = {
        RUN: Run.objects.select_related("queued_by", "device", "campaign").defer(*_HEAVY),
        BUILD: PgBuild.objects.select_related("queued_by").defer("log"),
        BASELINE: DeviceBaseline.objects.select_related("queued_by", "device").defer("fio_json", "log"),
    }
    return {kind: {job.pk: job for job in reads[kind].filter(pk__in=ids[kind])} if ids[kind] else {} for kind in reads}


def admins_to_ask() -> list[str]:
    """The usernames of a few who can give roles (they may enter the admin), for "ask …"."""
    app_label, codename = ADMIN_SITE_PERMISSION.split(".")
    held = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    admins = User.objects.filter(is_active=True).filter(
        Q(is_superuser=True) | Q(groups__permissions__in=held) | Q(user_permissions__in=held)
    )
    return list(admins.distinct().order_by("username").values_list("username", flat=True)[:ASK_AT_MOST])
