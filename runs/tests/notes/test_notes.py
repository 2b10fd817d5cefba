"""Notes and tags on runs and campaigns: what a tag may be, who may write them (the owner and
admins, audited; others are told why), the page and the API, the lists that show them, the
search and the tag filter of the run list, the API and comparisons, and grouping by tags."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runs.models import AuditAction, AuditEvent, Campaign, Run, RunOrigin, ShareLink
from runs.models.notes import NOTE_MAX, TAGS_MAX
from runs.notes.rules import NotesRefused, checked_notes, tags_from_text
from runs.notes.services.notes import notes_set
from runs.tests.api_schema import assert_answers_as_documented
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web.test_api import api_client

pytestmark = pytest.mark.django_db
VIEWER_REFUSAL = "To annotate runs needs the operator role; you are a viewer"


def test_tags_are_read_as_typed_lowercase_each_once_in_their_order() -> None:
    assert tags_from_text(" Firmware-2.1, nightly  NIGHTLY,ssd/raid:1+x ") == (
        "firmware-2.1",
        "nightly",
        "ssd/raid:1+x",
    )
    assert tags_from_text("") == ()


@pytest.mark.parametrize(
    ("note", "tags", "field", "said"),
    [
        ("", "fw#2", "tags", "the tag 'fw#2' may hold only lowercase letters, digits and . _ : + / -"),
        ("", "-x", "tags", "the tag '-x' may hold only"),
        ("", "x" * 41, "tags", "is longer than 40 characters"),
        ("", " ".join(f"t{n}" for n in range(TAGS_MAX + 1)), "tags", f"21 tags: at most {TAGS_MAX}"),
        ("x" * (NOTE_MAX + 1), "", "note", f"the note has {NOTE_MAX + 1} characters: at most {NOTE_MAX}"),
        ("a\x00b", "", "note", "NUL"),
    ],
)
def test_what_a_note_or_a_tag_may_not_be_is_said(note: str, tags: str, field: str, said: str) -> None:
    with pytest.raises(NotesRefused) as refused:
        checked_notes(note, tags)

    assert refused.value.field == field and said in str(refused.value)


@pytest.fixture
def run(users: dict[str, User]) -> Run:
    host = make_host()
    campaign = Campaign.objects.create(name="firmware study", base_spec={}, created_by=users["otto"])
    return make_run(host, make_device(host), make_pg_install(host), queued_by=users["otto"], campaign=campaign)


def test_the_owner_writes_notes_and_it_is_audited_with_what_changed(run: Run, users: dict[str, User]) -> None:
    notes_set(target=run, note="after firmware 2.1\r\n", tags="firmware-2.1, ssd", actor=users["otto"])
    notes_set(target=run, note="after firmware 2.1", tags=["firmware-2.1", "ssd"], actor=users["otto"])  # the same

    run.refresh_from_db()
    assert (run.note, run.tags) == ("after firmware 2.1", ["firmware-2.1", "ssd"])
    events = AuditEvent.objects.filter(action=AuditAction.NOTES_CHANGED)
    assert [(e.actor_name, e.object_id, e.message) for e in events] == [
        ("otto", str(run.pk), "the run's tags (none) → firmware-2.1, ssd; note '' → 'after firmware 2.1'")
    ]


@pytest.mark.parametrize(
    ("who", "said"),
    [
        ("vera", "To annotate runs needs the operator role; you are a viewer"),
        ("other", "Only otto, who queued this run, or an admin can annotate it."),
    ],
)
def test_others_are_told_who_may_and_nothing_changes(run: Run, users: dict[str, User], who: str, said: str) -> None:
    actor = users.get(who) or make_user(who, "operator")

    with pytest.raises(NotesRefused, match=said):
        notes_set(target=run, note="mine", tags="x", actor=actor)

    run.refresh_from_db()
    assert (run.note, run.tags) == ("", []) and not AuditEvent.objects.filter(action=AuditAction.NOTES_CHANGED)


def test_an_admin_writes_anybodys_campaign_notes(run: Run, users: dict[str, User]) -> None:
    campaign = run.campaign
    assert campaign is not None
    notes_set(target=campaign, note="rerun after the fan was fixed", tags="hw", actor=users["ada"])

    campaign.refresh_from_db()
    assert (campaign.note, campaign.tags) == ("rerun after the fan was fixed", ["hw"])


def test_the_page_edits_notes_and_refuses_a_bad_tag_changing_nothing(run: Run, client_for: ClientFactory) -> None:
    otto = client_for("otto")
    url = reverse("run-notes", args=[run.pk])

    refused = otto.post(url, {"note": "kept?", "tags": "good, b@d"})
    run.refresh_from_db()
    unchanged = (run.note, run.tags)
    saved = otto.post(url, {"note": "after firmware 2.1", "tags": "Firmware-2.1 ssd"})
    page = otto.get(reverse("run-detail", args=[run.pk])).content.decode()

    assert refused.status_code == 400 and "the tag &#x27;b@d&#x27; may hold only" in refused.content.decode()
    assert unchanged == ("", [])
    assert saved.status_code == 302 and saved["Location"] == reverse("run-detail", args=[run.pk]) + "#notes"
    assert 'id="note-text">after firmware 2.1</p>' in page
    assert f'href="{reverse("runs")}?tag=firmware-2.1"' in page and 'id="notes-edit"' in page


def test_a_viewer_sees_the_notes_and_why_she_cannot_edit_them(run: Run, client_for: ClientFactory) -> None:
    Run.objects.filter(pk=run.pk).update(note="after firmware 2.1", tags=["fw"])
    vera = client_for("vera")

    page = vera.get(reverse("run-detail", args=[run.pk])).content.decode()
    posted = vera.post(reverse("run-notes", args=[run.pk]), {"note": "hers", "tags": ""})

    assert (
        '<button type="button" id="notes-edit" disabled aria-describedby="notes-edit-refusal">Edit notes</button>'
        in page
    )
    assert VIEWER_REFUSAL in page and f'href="/runs/{run.pk}/notes"' not in page
    assert posted.status_code == 403 and VIEWER_REFUSAL in posted.content.decode()
    assert Run.objects.get(pk=run.pk).note == "after firmware 2.1"


def test_the_api_sets_notes_for_the_owner_and_refuses_others_with_the_reason(run: Run, users: dict[str, User]) -> None:
    url = f"/api/runs/{run.pk}/notes/"

    set_ = api_client(users["otto"]).post(url, {"note": "fw 2.1", "tags": ["fw-2.1"]}, format="json")
    bad = api_client(users["otto"]).post(url, {"tags": ["FW 2.1"]}, format="json")
    other = api_client(make_user("olga", "operator")).post(url, {"note": "x"}, format="json")
    viewer = api_client(users["vera"]).post(url, {"note": "x"}, format="json")
    detail = api_client(users["vera"]).get(f"/api/runs/{run.pk}/").json()
    campaign = api_client(users["otto"]).post(
        f"/api/campaigns/{run.campaign_id}/notes/", {"tags": ["a"]}, format="json"
    )

    assert set_.status_code == 200 and set_.json() == {"id": run.pk, "note": "fw 2.1", "tags": ["fw-2.1"]}
    assert_answers_as_documented("/api/runs/{id}/notes/", "post", 200, set_.json())
    assert_answers_as_documented("/api/campaigns/{id}/notes/", "post", 200, campaign.json())
    assert bad.status_code == 400 and "may hold only" in bad.json()["tags"][0]
    assert (
        other.status_code == 403
        and other.json()["detail"] == "Only otto, who queued this run, or an admin can annotate it."
    )
    assert viewer.status_code == 403
    assert (detail["note"], detail["tags"]) == ("fw 2.1", ["fw-2.1"])
    assert campaign.status_code == 200 and Campaign.objects.get(runs=run).tags == ["a"]


@pytest.fixture
def tagged(run: Run) -> dict[str, Run]:
    """Runs found by a word of their note, their own tag, their campaign's tag, or none."""
    host = run.server_host
    device, pg = run.device, run.pg_install
    Run.objects.filter(pk=run.pk).update(note="after firmware 2.1 on the ssd")
    Campaign.objects.filter(runs=run).update(tags=["fw-study"])
    own = make_run(host, device, pg, tags=["fw-study", "nightly"])
    other = make_run(host, device, pg, note="baseline", tags=["nightly"])
    return {"noted": run, "own": own, "other": other}


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ({"q": "FIRMWARE"}, {"noted"}),
        ({"q": "firmware study"}, {"noted"}),  # the campaign's name, word by word
        ({"q": "nightly"}, {"own", "other"}),  # a tag, as a word
        ({"q": "firmware nightly"}, set()),  # every word must be found
        ({"tag": "fw-study"}, {"noted", "own"}),  # the run's tag or its campaign's
        ({"tag": "nightly", "q": "baseline"}, {"other"}),
    ],
)
def test_search_and_tag_pick_the_same_runs_on_the_page_and_in_the_api(
    tagged: dict[str, Run], client_for: ClientFactory, query: dict[str, str], found: set[str]
) -> None:
    expected = {tagged[name].pk for name in found}

    page = client_for("vera").get(reverse("runs"), query).content.decode()
    api = api_client(make_user("vic", "viewer")).get("/api/runs/", query).json()

    assert {pk for pk in expected if f'<tr id="run-{pk}"' in page} == expected
    assert page.count('<tr id="run-') == len(expected)
    assert {row["id"] for row in api["results"]} == expected


def test_a_tag_that_cannot_be_one_is_refused_naming_what_a_tag_holds(client_for: ClientFactory) -> None:
    response = client_for("vera").get(reverse("runs"), {"tag": "FW 2.1"})

    assert response.status_code == 400
    assert "a tag holds only lowercase letters" in response.content.decode()


def test_a_comparison_filters_by_tag_and_groups_by_tags(tagged: dict[str, Run]) -> None:
    api = api_client(make_user("vic", "viewer"))

    by_tag = api.get("/api/comparisons/", {"tag": "nightly", "group": "tags"}).json()

    assert sorted((g["label"], g["runs"]) for g in by_tag["groups"]) == [
        ("tags fw-study, nightly", [tagged["own"].pk]),
        ("tags nightly", [tagged["other"].pk]),
    ]


def test_the_lists_show_tags_and_a_notes_beginning(tagged: dict[str, Run], client_for: ClientFactory) -> None:
    vera = client_for("vera")

    runs = vera.get(reverse("runs")).content.decode()
    campaigns = vera.get(reverse("campaigns")).content.decode()

    assert f'href="{reverse("runs")}?tag=nightly">nightly</a>' in runs
    assert "after firmware 2.1 on the ssd" in runs
    assert f'href="{reverse("runs")}?tag=fw-study">fw-study</a>' in campaigns


def test_a_campaigns_page_has_its_notes_panel_and_its_owner_edits_them(run: Run, client_for: ClientFactory) -> None:
    campaign_id = run.campaign_id
    otto = client_for("otto")

    saved = otto.post(reverse("campaign-notes", args=[campaign_id]), {"note": "rerun in May", "tags": "fw-study"})
    page = otto.get(reverse("campaign-detail", args=[campaign_id])).content.decode()
    shared_page_panel = client_for("vera").get(reverse("campaign-detail", args=[campaign_id])).content.decode()

    assert saved.status_code == 302
    assert 'id="note-text">rerun in May</p>' in page
    assert f'href="{reverse("campaign-notes", args=[campaign_id])}"' in page
    assert "To annotate campaigns needs the operator role; you are a viewer" in shared_page_panel


def test_who_imported_a_run_annotates_it(run: Run, users: dict[str, User]) -> None:
    Run.objects.filter(pk=run.pk).update(origin=RunOrigin.IMPORTED, queued_by=None, imported_by=users["otto"])
    imported = Run.objects.get(pk=run.pk)

    notes_set(target=imported, note="from the 2019 spreadsheet", tags="legacy", actor=users["otto"])
    with pytest.raises(NotesRefused, match=r"Only otto, who imported this run, or an admin can annotate it\."):
        notes_set(target=imported, note="mine", tags="", actor=make_user("olga", "operator"))

    assert Run.objects.get(pk=run.pk).tags == ["legacy"]


def test_the_notes_api_keeps_what_is_left_out_and_refuses_what_it_does_not_take(
    run: Run, users: dict[str, User]
) -> None:
    Run.objects.filter(pk=run.pk).update(note="after firmware 2.1", tags=["fw"])
    api, url = api_client(users["otto"]), f"/api/runs/{run.pk}/notes/"

    tags_only = api.post(url, {"tags": ["FW", "Nightly"]}, format="json")
    misspelt = api.post(url, {"notes": "gone?"}, format="json")
    nothing = api.post(url, {}, format="json")

    assert tags_only.json() == {"id": run.pk, "note": "after firmware 2.1", "tags": ["fw", "nightly"]}
    assert misspelt.status_code == 400 and "Unknown field 'notes': give note, tags or both." in str(misspelt.json())
    assert nothing.status_code == 400 and "Give note, tags or both." in str(nothing.json())
    assert Run.objects.get(pk=run.pk).note == "after firmware 2.1"


def test_grouping_by_tags_counts_the_campaigns_tags_as_the_filter_does(tagged: dict[str, Run]) -> None:
    answer = api_client(make_user("vic", "viewer")).get("/api/comparisons/", {"tag": "fw-study", "group": "tags"})

    assert sorted((g["label"], g["runs"]) for g in answer.json()["groups"]) == [
        ("tags fw-study", [tagged["noted"].pk]),  # its campaign's tag
        ("tags fw-study, nightly", [tagged["own"].pk]),
    ]


def test_a_comparison_grouped_by_tags_cannot_be_shared(tagged: dict[str, Run], client_for: ClientFactory) -> None:
    ids = f"{tagged['own'].pk},{tagged['other'].pk}"
    response = client_for("vera").post(reverse("share-new"), {"kind": "comparison", "runs": ids, "group": "tags"})

    assert response.status_code == 400
    assert "a shared comparison cannot be grouped by tags" in response.content.decode()
    assert not ShareLink.objects.exists()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("/compare/?campaign={c}&filesytem=ext4", "unknown parameter &#x27;filesytem&#x27;: a comparison takes runs"),
        ("/api/campaigns/{c}/comparison/?hots=2", "unknown parameter 'hots': a comparison takes runs"),
        ("/api/campaigns/{c}/results-table/?group=device", "Unknown parameter 'group': /api/campaigns/"),
    ],
)
def test_a_comparison_anywhere_refuses_a_parameter_it_does_not_read(
    run: Run, client_for: ClientFactory, url: str, said: str
) -> None:
    response = client_for("vera").get(url.format(c=run.campaign_id))

    assert response.status_code == 400
    assert said in response.content.decode()
