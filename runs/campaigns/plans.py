"""A campaign's plan from its three forms (the campaign, its base run, its matrix): what the
campaign form queues, and what a preset queues by itself once the builds it waits for are done
(campaigns.services.after_builds)."""

from collections.abc import Sequence
from typing import Any

from django import forms
from django.utils.datastructures import MultiValueDict

from runs.bench.specs import RunSpec
from runs.campaigns.matrix import variables_from_json
from runs.campaigns.preset_hosts import PresetRefused
from runs.campaigns.presets import PRESETS, preset_initial
from runs.campaigns.services.campaigns import CampaignPlan
from runs.forms.campaigns import CampaignForm, MatrixForm
from runs.forms.runs import RunForm
from runs.models import Campaign


class PresetInvalid(Exception):
    """The preset's own form does not validate, or its host cannot run (the inventory changed):
    str() says which fields, or why and which hosts can."""


def plan_from_forms(
    campaign_form: CampaignForm, base_form: RunForm, matrix_form: MatrixForm, preset: str
) -> CampaignPlan:
    """The plan the three forms hold (call after each is_valid())."""
    campaign = campaign_form.cleaned_data
    return CampaignPlan(
        name=campaign["name"],
        description=campaign["description"],
        base=RunSpec.from_form_data(base_form.cleaned_data),
        variables=matrix_form.variables(),
        repetitions=campaign["repetitions"],
        order=campaign["order"],
        seed=campaign["seed"],
        fresh_database=campaign["fresh_database"],
        fio_baseline=campaign.get("fio_baseline", False),
        fio_canary=campaign.get("fio_canary", False),
        target_ci_pct=campaign["target_ci_pct"],
        max_repetitions=campaign["max_repetitions"],
        preset=preset if preset in PRESETS else "",
    )


def plan_of_campaign(campaign: Campaign, name: str) -> CampaignPlan:
    """The plan `campaign` was queued with, under another name: a schedule's round is it expanded
    again against the inventory of its day. MatrixError if its variables no longer check."""
    return CampaignPlan(
        name=name,
        description=campaign.description,
        base=RunSpec.from_json(campaign.base_spec),
        variables=variables_from_json(campaign.variables),
        repetitions=campaign.repetitions,
        order=campaign.order,
        seed=campaign.seed,  # the same order each round
        fresh_database=campaign.fresh_database,
        preset=campaign.preset,
        target_ci_pct=campaign.target_ci_pct,
        max_repetitions=campaign.max_repetitions,
        fio_baseline=campaign.fio_baseline,
        fio_canary=campaign.fio_canary,
    )


def _as_data(form: forms.BaseForm) -> dict[str, list[str]]:
    """What a browser would post for the form as it first shows (its initial values)."""
    data: dict[str, list[str]] = {}
    for field in form:
        value = field.value()
        if value is None:
            continue
        data[field.html_name] = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    return data


def form_data(initial: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """A preset's initial values (presets.preset_initial) as a browser would post its form untouched."""
    return (
        _as_data(CampaignForm(initial=initial["campaign"]))
        | _as_data(RunForm(initial=initial["base"], prefix="base"))
        | _as_data(MatrixForm(initial=initial["matrix"]))
    )


def _bound(data: dict[str, list[str]]) -> tuple[CampaignForm, RunForm, MatrixForm]:
    posted = MultiValueDict(data)
    return CampaignForm(posted), RunForm(posted, prefix="base"), MatrixForm(posted)


def _problems(forms_: tuple[CampaignForm, RunForm, MatrixForm]) -> list[str]:
    return [
        f"{field}: {' '.join(str(message) for message in messages)}"
        for form in forms_
        if not form.is_valid()
        for field, messages in form.errors.items()
    ]


def plan_problems(data: dict[str, list[str]]) -> list[str]:
    """ "field: what is wrong" for each field of the three forms that does not validate."""
    return _problems(_bound(data))


def plan_from_data(data: dict[str, list[str]], preset: str) -> CampaignPlan:
    """The plan of a posted campaign form (field name -> values); PresetInvalid naming the
    fields that do not validate."""
    forms_ = _bound(data)
    if problems := _problems(forms_):
        title = PRESETS[preset].title if preset in PRESETS else "campaign"
        raise PresetInvalid(f"the {title} preset's form does not validate: " + "; ".join(problems))
    return plan_from_forms(*forms_, preset)


def preset_plan(name: str, hosts: Sequence[int] | None = None) -> CampaignPlan:
    """The preset's study on these hosts (ids; none: the preset's default, which its description
    names) exactly as its form would queue it untouched; PresetInvalid if a host cannot run it or
    the form it fills does not validate (then nothing can be queued from it as it stands)."""
    try:
        initial = preset_initial(name, hosts)
    except PresetRefused as exc:
        raise PresetInvalid(f"the {PRESETS[name].title} preset: {exc}") from exc
    return plan_from_data(form_data(initial), name)
