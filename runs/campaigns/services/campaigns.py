"""Writes for campaigns: plan (expand and check, nothing written), queue, cancel, retry.

A campaign is queued in one transaction: the campaign, its configurations and all its runs in
interleaved order (sweep.run_order), or nothing at all. With `fio_baseline`, a raw device
baseline (fio) of each distinct device is queued first, in the same transaction: the queue
(one line, first come first served) runs each before that device's runs. The runs are ordinary runs from then on:
the queue starts them in that order, and cancelling or retrying goes through the runs' services.
"""

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from runs.baselines.services.baselines import baseline_queue
from runs.bench.services.runs import runs_enqueue
from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import Cell, Variable, expand, run_order, variables_as_json
from runs.campaigns.services.canary import CanaryRefused, canaries_queue_before
from runs.common.roles import owner_refusal
from runs.common.services.audit import audit_record
from runs.jobs.cancel import JobRefused, job_cancel
from runs.lab.fio.plan import FioSettings, MiB
from runs.method.selectors import spec_method
from runs.method.services.acceptance import accepted_when_queued
from runs.models import (
    ENDED_BASELINE_STATES,
    MAX_CONFIGURATIONS,
    AuditAction,
    Campaign,
    CampaignConfiguration,
    Device,
    DeviceBaseline,
    Run,
    RunOrder,
    RunState,
)

MAX_RUNS = 5000  # one campaign; a week of 2-minute runs


class CampaignRefused(Exception):
    """The campaign cannot be queued as it stands; str() says why, for the user to read."""


class NothingToCancel(CampaignRefused):
    """Every run (and baseline) the cancel would reach has ended already."""


class CampaignForbidden(Exception):
    """The user may not retry this campaign; str() says who may."""


def campaign_owner_refusal(user: AbstractBaseUser | AnonymousUser, campaign: Campaign, doing: str) -> str | None:
    """Why `user` may not cancel or retry (`doing`) `campaign`, or None: operators their own
    campaigns, admins anybody's (as runs: roles.cancel_refusal)."""
    needs = "runs.cancel_run" if doing == "cancel" else "runs.queue_run"
    return owner_refusal(user, campaign.created_by, "campaign", doing, needs)


@dataclass(frozen=True)
class CampaignPlan:
    """What a campaign would queue: checked, not yet written."""

    name: str
    description: str
    base: RunSpec
    variables: Sequence[Variable]
    repetitions: int
    order: str = RunOrder.INTERLEAVED
    seed: int | None = None
    fresh_database: bool = False
    preset: str = ""
    target_ci_pct: float | None = None  # adaptive repetition (campaigns.services.adaptive)
    max_repetitions: int | None = None
    fio_baseline: bool = False  # a fio baseline of each device before its runs
    fio_canary: bool = False  # a short fio canary of each device before and after (campaigns.services.canary)
    method_reason: str = ""  # accepts the method warnings of the runs queued now (runs.method)

    @property
    def most_repetitions(self) -> int:
        return self.max_repetitions or self.repetitions

    def cells(self) -> list[Cell]:
        return expand(self.base, self.variables, Inventory.load())


def campaign_refusal(plan: CampaignPlan, cells: Sequence[Cell]) -> str | None:
    """Why the plan cannot be queued, or None."""
    valid = [cell for cell in cells if cell.valid]
    if not valid:
        return "No combination of the values can run (each one's reason is listed): nothing to queue."
    if len(valid) > MAX_CONFIGURATIONS:
        return f"{len(valid)} configurations: a campaign may have at most {MAX_CONFIGURATIONS}. Sweep fewer values."
    if len(valid) * plan.most_repetitions > MAX_RUNS:
        return f"up to {len(valid) * plan.most_repetitions} runs: a campaign may queue at most {MAX_RUNS}."
    return None


def campaign_create(
    *, plan: CampaignPlan, by: AbstractBaseUser | AnonymousUser, request: HttpRequest | None = None
) -> Campaign:
    """Queue the plan's valid configurations times repetitions, interleaved; CampaignRefused if it
    cannot (then nothing is written)."""
    cells = plan.cells()
    if refusal := campaign_refusal(plan, cells):
        raise CampaignRefused(refusal)
    valid = [cell for cell in cells if cell.valid]
    seed = plan.seed
    if plan.order == RunOrder.SHUFFLED and seed is None:
        seed = secrets.randbelow(2**31)  # recorded, so the order can be reproduced
    user = by if isinstance(by, User) else None
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=plan.name,
            description=plan.description,
            preset=plan.preset,
            base_spec=plan.base.as_json(),
            variables=variables_as_json(plan.variables),
            repetitions=plan.repetitions,
            order=plan.order,
            seed=seed if plan.order == RunOrder.SHUFFLED else None,
            fresh_database=plan.fresh_database,
            target_ci_pct=plan.target_ci_pct,
            max_repetitions=plan.max_repetitions,
            fio_baseline=plan.fio_baseline,
            fio_canary=plan.fio_canary,
            rejected=[{"label": cell.label, "reasons": cell.reasons()} for cell in cells if not cell.valid],
            created_by=user,
        )
        configurations = [
            CampaignConfiguration.objects.create(
                campaign=campaign, index=index, label=cell.label, values=dict(cell.values), spec=cell.spec.as_json()
            )
            for index, cell in enumerate(valid)
        ]
        order = run_order(len(valid), plan.repetitions, campaign.seed)
        if plan.fio_baseline:
            _queue_baselines(campaign, [cell.spec.device_id for cell in valid], user, request)
        if plan.fio_canary:  # after the baselines: it measures the device as the runs find it
            try:
                canaries_queue_before(campaign, [cell.spec.device_id for cell in valid], user, request)
            except CanaryRefused as exc:
                raise CampaignRefused(str(exc)) from None
        reason = plan.method_reason
        accepted = [accepted_when_queued(spec_method(cell.spec), reason, by) if reason else {} for cell in valid]
        runs = [
            _campaign_run(campaign, configurations[index], valid[index].spec, repetition, user, accepted[index])
            for index, repetition in order
        ]
        audit_record(
            action=AuditAction.CAMPAIGN_QUEUED,
            target=campaign,
            actor=user,
            request=request,
            message=f"{len(configurations)} configurations × {plan.repetitions} = {len(runs)} runs",
        )
        clients = [valid[index].spec.client_host_ids for index, _ in order]
        runs_enqueue(runs=runs, client_host_ids=clients, request=request)
    return campaign


def campaign_fio_settings(device: Device) -> FioSettings:
    """fio's standard settings, on no more of the device than it has."""
    settings = FioSettings()
    if device.capacity_bytes and device.capacity_bytes < settings.size_bytes:
        return FioSettings(size_bytes=max(16 * MiB, device.capacity_bytes // MiB * MiB))
    return settings


def _queue_baselines(campaign: Campaign, device_ids: list[int], user: User | None, request: HttpRequest | None) -> None:
    """One fio baseline per distinct device, queued before the runs (so first in line); a device
    fio may not measure refuses the campaign (the caller's transaction writes nothing)."""
    devices = Device.objects.select_related("host").in_bulk(set(device_ids))
    for device_id in dict.fromkeys(device_ids):
        device = devices[device_id]
        try:
            baseline_queue(
                device=device, settings=campaign_fio_settings(device), by=user, request=request, campaign=campaign
            )
        except ValidationError as exc:
            reasons = "; ".join(message for messages in exc.message_dict.values() for message in messages)
            raise CampaignRefused(f"No fio baseline of {device} can be queued: {reasons}") from None


def _campaign_run(
    campaign: Campaign,
    configuration: CampaignConfiguration,
    spec: RunSpec,
    repetition: int,
    user: User | None,
    method_overrides: dict[str, dict[str, str]] | None = None,
) -> Run:
    """The run of one configuration's repetition, not yet saved: its client hosts are the spec's
    client_host_ids, which runs_enqueue writes with it."""
    return Run(
        **spec.run_fields(),
        campaign=campaign,
        configuration=configuration,
        repetition=repetition,
        queued_by=user,
        method_overrides=method_overrides or {},
    )


def campaign_cancel(
    *,
    campaign: Campaign,
    by: AbstractBaseUser | AnonymousUser,
    configuration: CampaignConfiguration | None = None,
    request: HttpRequest | None = None,
) -> int:
    """Cancel every unfinished run of the campaign (or of one configuration); how many. Its owner
    and admins may (JobRefused for anyone else); NothingToCancel when everything has ended."""
    if refusal := campaign_owner_refusal(by, campaign, "cancel"):
        raise JobRefused(refusal)
    runs = Run.objects.filter(campaign=campaign, cancel_requested=False)  # one being stopped is cancelled
    runs = runs.exclude(state__in=[RunState.DONE, RunState.FAILED, RunState.CANCELLED])
    if configuration is not None:
        runs = runs.filter(configuration=configuration)
    # Queued runs first (their hosts go to nobody else of the campaign), running ones last.
    runs = runs.select_related("queued_by", "campaign__created_by")
    pending = sorted(runs, key=lambda run: (run.state != RunState.QUEUED, run.pk))
    baselines = [] if configuration is not None else _unended_baselines(campaign)
    if not pending and not baselines:
        what = f"configuration {configuration.index} ({configuration.label})" if configuration else "this campaign"
        raise NothingToCancel(f"Nothing of {what} is left to cancel: its runs have ended or are being stopped.")
    with transaction.atomic():
        # Its fio baselines not yet ended too, for the whole campaign; JobRefused rolls all back.
        for job in [*pending, *baselines]:
            job_cancel(job, by=by, request=request)
        what = f"configuration {configuration.index} ({configuration.label})" if configuration else "all"
        user = by if isinstance(by, User) else None
        audit_record(
            action=AuditAction.CAMPAIGN_CANCELLED,
            target=campaign,
            actor=user,
            request=request,
            message=f"{what}: {len(pending)} runs",
        )
    return len(pending)


def _unended_baselines(campaign: Campaign) -> list[DeviceBaseline]:
    unended = campaign.baselines.exclude(state__in=ENDED_BASELINE_STATES).filter(cancel_requested=False)
    return list(unended.select_related("queued_by"))


def campaign_retry_failed(
    *,
    campaign: Campaign,
    by: AbstractBaseUser | AnonymousUser,
    request: HttpRequest | None = None,
    new_seeds: bool = False,
) -> int:
    """Queue again, at the end of the queue, each repetition whose latest attempt failed, with the
    random seed that attempt had (`new_seeds`: each a new one, unless its configuration sets one).
    Its owner and admins may (CampaignForbidden for anyone else)."""
    if refusal := campaign_owner_refusal(by, campaign, "retry"):
        raise CampaignForbidden(refusal)
    latest: dict[tuple[int, int], Run] = {}
    for run in Run.objects.filter(campaign=campaign).order_by("pk"):
        if run.configuration_id is not None and run.repetition is not None:
            latest[(run.configuration_id, run.repetition)] = run
    failed = [run for run in latest.values() if run.state == RunState.FAILED]
    if not failed:
        return 0
    user = by if isinstance(by, User) else None
    configurations = {c.pk: c for c in campaign.configurations.all()}
    inventory = Inventory.load()
    again, clients = [], []
    for run in failed:
        configuration = configurations[run.configuration_id]  # type: ignore[index]
        spec = RunSpec.from_json(configuration.spec)
        # The inventory may have changed since (a device no longer wipeable): checked like new.
        if errors := spec_errors(spec, inventory):
            reasons = "; ".join(message for messages in errors.values() for message in messages)
            raise CampaignRefused(f"{configuration.label} cannot run again: {reasons}")
        if not new_seeds and spec.random_seed is None:
            spec = spec.replace(random_seed=run.random_seed)
        again.append(_campaign_run(campaign, configuration, spec, run.repetition or 1, user))
        clients.append(spec.client_host_ids)
    with transaction.atomic():
        audit_record(
            action=AuditAction.CAMPAIGN_RETRIED,
            target=campaign,
            actor=user,
            request=request,
            message=f"{len(again)} failed runs queued again: " + ", ".join(str(run.pk) for run in failed),
        )
        runs_enqueue(runs=again, client_host_ids=clients, request=request)
    return len(again)


__all__ = [
    "CampaignForbidden",
    "CampaignPlan",
    "CampaignRefused",
    "NothingToCancel",
    "campaign_cancel",
    "campaign_create",
    "campaign_owner_refusal",
    "campaign_refusal",
    "campaign_retry_failed",
]
