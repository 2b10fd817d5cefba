"""Change points stored (runs.watch.services.detect): found once, upserted by identity, kept through
triage (runs.watch.services.triage), detected by the run-end hook once a round has ended and by
`manage.py watch_detect`."""

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from runs.bench.specs import RunSpec
from runs.models import AuditEvent, ChangePointState, RunState, StoredChangePoint
from runs.tests.watch.history import History, make_history
from runs.watch.series import series_key
from runs.watch.services import hooks
from runs.watch.services.detect import watch_detect
from runs.watch.services.hooks import watch_after_run, watch_round_ended
from runs.watch.services.triage import TriageRefused, change_point_triage

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(users: dict[str, User]) -> History:
    return make_history(users["otto"])


def key_of(history: History) -> str:
    return series_key(RunSpec.from_run(history.rounds[0][0]))


def test_detection_stores_each_change_point_once_with_its_numbers(history: History) -> None:
    key = key_of(history)
    found = watch_detect(key)
    assert found.stored == 2 and len(found.new) == 2  # steady tps up, mean latency down, at round 7
    tps = StoredChangePoint.objects.get(metric="steady_tps")
    step = history.rounds[6][0]
    assert tps.identity == f"{key}:steady_tps:c{step.campaign_id}"
    assert (tps.round_before, tps.round_after, tps.state) == (6, 7, ChangePointState.OPEN)
    assert round(tps.change * 100, 1) == 9.8 and tps.change_low is not None and tps.p < 0.001
    assert "kernel changed from 6.1.0-25-amd64 to 6.1.0-26-amd64" in tps.drift
    before, after = history.rounds[5], history.rounds[6]
    ids = ",".join(str(run.pk) for run in before + after)
    assert tps.comparison_url == f"/compare/?runs={ids}&group=random_seed&show={before[-1].pk},{after[0].pk}"
    assert tps.title.startswith("lab1 · lab1:ssd · ext4")

    again = watch_detect(key)
    assert (again.stored, again.new) == (2, [])  # idempotent: the same rows
    assert StoredChangePoint.objects.count() == 2


def test_detecting_again_updates_the_numbers_and_keeps_the_triage(history: History, users: dict[str, User]) -> None:
    key = key_of(history)
    watch_detect(key)
    point = StoredChangePoint.objects.get(metric="steady_tps")
    note = "kernel 6.1.0-26 applied"
    change_point_triage(point=point, state=ChangePointState.EXPECTED, note=note, actor=users["otto"])
    StoredChangePoint.objects.filter(pk=point.pk).update(change=0.5)
    watch_detect(key)
    point.refresh_from_db()
    assert round(point.change, 3) == 0.098 and point.state == ChangePointState.EXPECTED
    assert point.note == "kernel 6.1.0-26 applied"


def test_triage_moves_between_states_audited(history: History, users: dict[str, User]) -> None:
    watch_detect(key_of(history))
    point = StoredChangePoint.objects.get(metric="steady_tps")
    otto = users["otto"]
    change_point_triage(point=point, state=ChangePointState.ACKNOWLEDGED, actor=otto)
    point.refresh_from_db()
    assert (point.state, point.triaged_by, point.note) == (ChangePointState.ACKNOWLEDGED, otto, "")
    change_point_triage(point=point, state=ChangePointState.EXPECTED, note=" firmware 2.1 applied ", actor=otto)
    point.refresh_from_db()
    assert (point.state, point.note) == (ChangePointState.EXPECTED, "firmware 2.1 applied")
    change_point_triage(point=point, state=ChangePointState.OPEN, actor=users["ada"])
    point.refresh_from_db()
    assert (point.state, point.note, point.triaged_by) == (ChangePointState.OPEN, "", users["ada"])
    audited = AuditEvent.objects.filter(action="change_point_triaged").order_by("pk")
    said = list(audited.values_list("message", flat=True))
    assert said == ["open → acknowledged", "acknowledged → expected: firmware 2.1 applied", "expected → open"]


@pytest.mark.parametrize(
    ("state", "note", "field", "text"),
    [
        ("expected", "", "note", "marking a change point expected needs a note saying why"),
        ("expected", "x" * 501, "note", "a note is at most 500 characters, not 501"),
        ("closed", "", "state", "state must be one of open, acknowledged, expected, not 'closed'"),
    ],
    ids=["no-note", "long-note", "bad-state"],
)
def test_bad_triage_is_refused_saying_why_and_nothing_is_written(
    history: History, users: dict[str, User], state: str, note: str, field: str, text: str
) -> None:
    watch_detect(key_of(history))
    point = StoredChangePoint.objects.get(metric="steady_tps")
    with pytest.raises(TriageRefused, match=text) as refused:
        change_point_triage(point=point, state=state, note=note, actor=users["otto"])
    assert refused.value.field == field
    point.refresh_from_db()
    assert point.state == ChangePointState.OPEN and not AuditEvent.objects.filter(action="change_point_triaged")


def test_a_viewer_may_not_triage(history: History, users: dict[str, User]) -> None:
    watch_detect(key_of(history))
    point = StoredChangePoint.objects.get(metric="steady_tps")
    with pytest.raises(PermissionError, match="operator or admin"):
        change_point_triage(point=point, state=ChangePointState.ACKNOWLEDGED, actor=users["vera"])


def test_the_hook_sends_a_task_once_the_run_has_committed(
    history: History, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    sent: list[tuple[str, list[int]]] = []
    monkeypatch.setattr(hooks.app, "send_task", lambda name, args: sent.append((name, args)))
    run = history.rounds[-1][0]
    with django_capture_on_commit_callbacks(execute=True):
        watch_after_run(run)
    assert sent == [("runs.watch_round_ended", [run.pk])] and not StoredChangePoint.objects.exists()


def test_the_task_detects_once_the_rounds_campaign_has_ended(history: History) -> None:
    last = history.rounds[-1]  # round 12: a single run outside campaigns
    campaign_round = history.rounds[-2]  # round 11: a campaign of three
    campaign_round[0].state = RunState.QUEUED
    campaign_round[0].save(update_fields=["state"])
    assert watch_round_ended(campaign_round[1].pk) == 0
    assert not StoredChangePoint.objects.exists()  # its round goes on
    campaign_round[0].state = RunState.DONE
    campaign_round[0].save(update_fields=["state"])
    assert watch_round_ended(campaign_round[0].pk) == 1
    assert StoredChangePoint.objects.count() == 2
    StoredChangePoint.objects.all().delete()
    assert watch_round_ended(last[0].pk) == 1  # a run outside campaigns is a round of its own
    assert StoredChangePoint.objects.count() == 2


def test_the_command_detects_every_series_or_those_given(history: History, users: dict[str, Any]) -> None:
    out = StringIO()
    call_command("watch_detect", "--all", stdout=out)
    assert out.getvalue().endswith("1 series, 2 new change points\n")
    out = StringIO()
    call_command("watch_detect", key_of(history), stdout=out)
    assert out.getvalue() == f"{key_of(history)}: 2 change points, 0 new\n1 series, 0 new change points\n"
    with pytest.raises(CommandError, match="a series key is 16 hexadecimal digits"):
        call_command("watch_detect", "lab1")
    with pytest.raises(CommandError, match="give series keys or --all"):
        call_command("watch_detect")
