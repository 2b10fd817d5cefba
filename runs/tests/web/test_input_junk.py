"""Generated junk in every form field and API parameter: always a 4xx with a message (or a
valid request, answered as one), never a 5xx, and nothing queued by a refused request.

Hypothesis draws a field and a value meant to break things: digits that are not ASCII ("²"),
numbers past bigint and past Python's 4,300-digit limit, infinities, NUL bytes, huge strings,
JSON of the wrong type. Every API body is also sent, in every field (a campaign's base and each
variable's values included) and as the whole body, JSON text json.dumps never writes: lone
surrogates, NULs, nesting 50,000 deep, numbers past a float's range.

The first version of these tests drew text from hypothesis' default alphabet, which leaves out
surrogates, sent junk to the run API's top-level fields only (never a campaign's variables or
base, a build, a baseline or an action's body), nested no deeper than a list of integers, always
sent an object as the body, and wrote its JSON with json.dumps (no 1e999999, no 50,000 "["): the
500s of issue 29 were in what it could not draw.
"""

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from runs.api.parsers import MAX_DEPTH
from runs.campaigns.variables import VARIABLES
from runs.forms.runs import RUN_FIELDS
from runs.models import (
    AuditEvent,
    BaselineState,
    BuildState,
    Campaign,
    CampaignSchedule,
    Device,
    DeviceBaseline,
    Host,
    PgBuild,
    PgInstall,
    Run,
    RunState,
    ScheduleSubscriber,
    StoredChangePoint,
)
from runs.schedules.crontab import CRON_PRESETS, Crontab
from runs.schedules.services.schedules import schedule_create
from runs.tests.builds.test_builds import form_fields as build_form_fields
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields
from runs.tests.job_factories import make_baseline, make_build, make_campaign, make_change_point

pytestmark = pytest.mark.django_db
# The inventory and the user are made once per test and shared by its examples, as meant: a
# refused request changes nothing, and an accepted one is checked for what it queued.
FIXTURES_PER_TEST = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

# Every one of these is sent to every field and parameter, not left to chance.
NUMBERS_THAT_BREAK_THINGS = (
    ["²", "٣", "١٢", "0x10", "1e309", "inf", "-inf", "nan", "-1", "-0", "0", "1.5", " 7", "7 ", "+7", "1_000"]
    + ["1" + "0" * k for k in (18, 19, 20, 40, 4300, 5000)]
    + [str(2**63 - 1), str(2**63), str(2**64), "99999999999999999999-0", "1-99999999999999999999999", "\x00"]
)
numbers_that_break_things = st.sampled_from(NUMBERS_THAT_BREAK_THINGS)
text_that_breaks_things = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8).map(lambda s: s + "\x00"),
    st.sampled_from(["", " ", "\x00", "'", '"', "\\", "%", "../..", "a" * 100_000, "\ud7ff", "null", "true"]),
)
junk_text = st.one_of(numbers_that_break_things, text_that_breaks_things)
junk_json: st.SearchStrategy[Any] = st.one_of(
    junk_text,
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)

# JSON text as a client may write it and json.dumps never does: each class of issue 29's 500s.
LONE_SURROGATES = st.integers(0xD800, 0xDFFF).map(lambda code: f'"ext4\\u{code:04x}"')
NULS = st.text(max_size=8).map(lambda text: json.dumps(f"{text}\x00{text}"))
TOO_DEEP = st.one_of(
    st.just("[" * 50_000),
    st.integers(MAX_DEPTH + 1, 50_000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(MAX_DEPTH + 1, 2_000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
)
PAST_A_FLOAT = st.sampled_from(["1e999999", "-1e999999", "1e309", "Infinity", "NaN"])
WRONG_TYPES = st.sampled_from(["abc", 1.5, {"a": 1}, None, True, [1, 2, 3], "8/x", "3+x", [], {}, 0, -1, 2**63])
junk_json_text = st.one_of(
    junk_json.map(json.dumps), WRONG_TYPES.map(json.dumps), LONE_SURROGATES, NULS, TOO_DEEP, PAST_A_FLOAT
)


async def read_to_the_end(response: Any) -> None:
    """A finished run's stream ends by itself; a test waits 10 s at most for it to."""

    async def read() -> None:
        async for _chunk in response.streaming_content:
            pass

    await asyncio.wait_for(read(), timeout=10)


@pytest.fixture
def inventory() -> dict[str, Any]:
    host = make_host(name="lab1")
    device = make_device(host, wipe_allowed=True, capacity_bytes=2**30)
    pg = make_pg_install(host)
    return {"host": host, "device": device, "pg": pg}


@pytest.fixture
def otto() -> User:
    return make_user("otto", "operator")


@pytest.fixture
def otto_signed_in(otto: User) -> Client:
    """otto's browser, signed in once for all of a test's requests."""
    client = Client()
    client.force_login(otto)
    return client


def valid_run(inventory: dict[str, Any]) -> dict[str, Any]:
    return run_form_fields(inventory["host"], inventory["device"], inventory["pg"])


def assert_answered(status: int, queued: int, what: str) -> None:
    assert status < 500, f"{what}: {status}"
    if status >= 400:
        assert queued == 0, f"{what}: refused ({status}) but {queued} run(s) queued"


def post_form(inventory: dict[str, Any], client: Client, field: str, value: str) -> None:
    before = Run.objects.count()

    response = client.post("/runs/new/", valid_run(inventory) | {field: value})

    queued = Run.objects.count() - before
    assert_answered(response.status_code, queued, f"{field}={value[:50]!r}")
    assert response.status_code in (302, 400)
    if response.status_code == 400:
        assert 'class="error"' in response.content.decode(), "refused without saying why"
    else:
        assert queued == 1


@pytest.mark.parametrize("field", RUN_FIELDS)
def test_the_queue_form_answers_numbers_that_break_things_in_every_field(
    inventory: dict[str, Any], otto_signed_in: Client, field: str
) -> None:
    for value in NUMBERS_THAT_BREAK_THINGS:
        post_form(inventory, otto_signed_in, field, value)


@FIXTURES_PER_TEST
@given(field=st.sampled_from(RUN_FIELDS), value=junk_text)
def test_the_queue_form_answers_junk_in_any_field_with_a_message(
    inventory: dict[str, Any], otto_signed_in: Client, field: str, value: str
) -> None:
    post_form(inventory, otto_signed_in, field, value)


@FIXTURES_PER_TEST
@given(field=st.sampled_from(RUN_FIELDS), value=junk_json)
def test_the_api_answers_junk_in_any_field_with_a_message(
    inventory: dict[str, Any], otto: User, field: str, value: Any
) -> None:
    client = APIClient()
    client.force_authenticate(otto)
    before = Run.objects.count()

    body = json.dumps(valid_run(inventory) | {field: value})
    response = client.post("/api/runs/", body, content_type="application/json")

    queued = Run.objects.count() - before
    assert_answered(response.status_code, queued, f"{field}={str(value)[:50]!r}")
    assert response.status_code in (201, 400)
    if response.status_code == 400:
        messages = response.json()
        assert messages and all(isinstance(m, (str, list, dict)) for m in messages.values()), messages


API_QUERY_PARAMETERS = (
    [("/api/runs/", name) for name in ("host", "device", "pg_install", "state", "filesystem", "workload")]
    + [("/api/runs/", "limit"), ("/api/runs/", "offset"), ("/api/devices/", "host"), ("/api/hosts/", "limit")]
    + [("/api/change-points/", "state"), ("/api/change-points/", "limit"), ("/api/subscribers/", "schedule")]
)


def get_api(otto: User, path: str, name: str, value: str) -> None:
    client = APIClient()
    client.force_authenticate(otto)

    response = client.get(path, {name: value})

    assert response.status_code in (200, 400), f"{name}={value[:50]!r}: {response.status_code}"
    if response.status_code == 400:
        assert response.json().get(name) or response.json().get("detail"), response.json()


@pytest.mark.parametrize("target", API_QUERY_PARAMETERS, ids="?".join)
def test_api_query_parameters_answer_numbers_that_break_things_with_400_and_a_message(
    otto: User, target: tuple[str, str]
) -> None:
    for value in NUMBERS_THAT_BREAK_THINGS:
        get_api(otto, *target, value)


@FIXTURES_PER_TEST
@given(target=st.sampled_from(API_QUERY_PARAMETERS), value=junk_text)
def test_api_query_parameters_answer_junk_with_400_and_a_message(
    otto: User, target: tuple[str, str], value: str
) -> None:
    get_api(otto, *target, value)


@pytest.mark.parametrize("value", NUMBERS_THAT_BREAK_THINGS)
def test_page_parameters_and_ids_in_urls_answer_numbers_that_break_things(
    inventory: dict[str, Any], otto_signed_in: Client, value: str
) -> None:
    page_parameters_answer(inventory, otto_signed_in, value)


@FIXTURES_PER_TEST
@given(value=junk_text)
def test_page_parameters_and_ids_in_urls_answer_junk_without_a_server_error(
    inventory: dict[str, Any], otto_signed_in: Client, value: str
) -> None:
    page_parameters_answer(inventory, otto_signed_in, value)


def page_parameters_answer(inventory: dict[str, Any], client: Client, value: str) -> None:
    run = make_run(inventory["host"], inventory["device"], inventory["pg"], state=RunState.DONE)

    again = client.get("/runs/new/", {"again": value})
    after = client.get(f"/runs/{run.pk}/events", {"after": value})
    resumed = client.get(f"/runs/{run.pk}/events", headers={"Last-Event-ID": value}) if value.isprintable() else after
    detail = client.get(f"/runs/{quote(value, safe='')}/")
    api_detail = client.get(f"/api/runs/{quote(value, safe='')}/")
    # The regression watch's pages: its list's filters and pages, a series' key in its URL.
    watch = [client.get("/regressions/", {name: value}) for name in ("state", "found", "page")]
    watch.append(client.get(f"/series/{quote(value, safe='')}/"))

    assert again.status_code in (200, 400, 404), again.status_code
    for stream in {id(after): after, id(resumed): resumed}.values():
        assert stream.status_code in (200, 400), stream.status_code
        if stream.status_code == 200:
            async_to_sync(read_to_the_end)(stream)
    # A NUL anywhere in a request is refused before any page sees it (400).
    assert detail.status_code in (200, 400, 404) and api_detail.status_code in (200, 400, 404)
    assert all(page.status_code in (200, 400, 404) for page in watch), [page.status_code for page in watch]
    for refused in (again, after, resumed):
        if refused.status_code == 400:
            assert b"must be" in refused.content or b"NUL character" in refused.content


@pytest.mark.parametrize("field", ["username", "password"])
def test_the_login_form_answers_junk_without_a_server_error(field: str) -> None:
    """The one form anyone may post to, logged in or not."""
    make_user("otto", "operator", password="otto-has-a-long-password")
    values = [*NUMBERS_THAT_BREAK_THINGS, "x" * 256, "o" * 5000, "otto\x00", "\ud7ff" * 10]
    for number, value in enumerate(values):
        fields = {"username": "otto", "password": "wrong"} | {field: value}
        response = Client(REMOTE_ADDR=f"10.9.{number // 250}.{number % 250}").post("/accounts/login/", fields)

        assert response.status_code in (200, 400, 429), (value[:40], response.status_code)


ADMIN_LISTS = {
    "/admin/runs/host/": ["enabled__exact", "transport__exact", "q"],
    "/admin/runs/device/": ["kind__exact", "host__id__exact", "q"],
    "/admin/runs/pginstall/": ["version", "block_size__exact", "q"],
    "/admin/runs/auditevent/": ["action__exact", "at__year", "at__gte", "address", "actor_name", "q"],
}


@pytest.mark.parametrize("path", ADMIN_LISTS)
def test_the_admins_lists_answer_junk_filters_and_selections_without_a_server_error(path: str) -> None:
    ada = Client()
    ada.force_login(make_user("ada", "admin"))
    for name in ADMIN_LISTS[path]:
        for value in NUMBERS_THAT_BREAK_THINGS:
            status = ada.get(path, {name: value}).status_code
            assert status in (200, 302, 400), (path, name, value[:40], status)
    for selected in ("abc", "²", "1" + "0" * 30, "\x00"):
        action = {"action": "delete_selected", "_selected_action": [selected]}
        status = ada.post(path, action).status_code
        assert status in (200, 302, 400, 403), (path, selected, status)


# ---- every API body: each field, each variable's values, the base's fields, the whole body ----

JUNK = "@@junk@@"  # where the junk goes: json.dumps writes the rest of the body
WHOLE_BODY = "(the whole body)"


@dataclass(frozen=True)
class ApiBody:
    """One write of the API: where to, a valid body, the places junk is put in it, and how (POST,
    or PATCH for a change to what exists)."""

    path: Callable[["Lab"], str]
    body: Callable[["Lab"], dict[str, Any]]
    method: str = "post"

    def places(self, lab: "Lab") -> list[str]:
        body = self.body(lab)
        places = [WHOLE_BODY, *body]
        if "base" in body:
            places += [f"base.{name}" for name in body["base"]]
        if "variables" in body:
            places += [f"variables.{name}" for name in VARIABLES]
        return places


@dataclass(frozen=True)
class Lab:
    """What the bodies name: a host with two wipeable devices and an install, and one finished
    run, campaign, build and baseline of otto's for the actions (acting on them changes nothing),
    his schedule of the campaign and an open change point to triage."""

    host: Host
    device: Device
    pg: PgInstall
    run: Run
    campaign: Campaign
    build: PgBuild
    baseline: DeviceBaseline
    schedule: CampaignSchedule
    change_point: StoredChangePoint


def run_body(lab: Lab) -> dict[str, Any]:
    return run_form_fields(lab.host, lab.device, lab.pg)


def campaign_body(lab: Lab, preview: bool) -> dict[str, Any]:
    ram = lab.host.devices.get(name="ram")
    variables = [{"field": "device", "values": [ram.pk, lab.device.pk]}, {"field": "scale", "values": [1, "2"]}]
    base = {"server_host": lab.host.pk, "device": lab.device.pk, "pg_install": lab.pg.pk, "filesystem": "ext4",
            "scale": 1, "clients": 2, "threads": 1, "duration_s": 5}  # fmt: skip
    return {"name": "junk", "base": base, "variables": variables, "repetitions": 1, "preview": preview}


API_BODIES = {
    "create a run": ApiBody(lambda lab: "/api/runs/", run_body),
    "preview a campaign": ApiBody(lambda lab: "/api/campaigns/", partial(campaign_body, preview=True)),
    "create a campaign": ApiBody(lambda lab: "/api/campaigns/", partial(campaign_body, preview=False)),
    "queue a build": ApiBody(lambda lab: "/api/builds/", lambda lab: build_form_fields(lab.host)),
    "queue a baseline": ApiBody(
        lambda lab: "/api/baselines/", lambda lab: {"device": lab.device.pk, "size_mib": 64, "runtime_s": 2}
    ),
    "cancel a run": ApiBody(lambda lab: f"/api/runs/{lab.run.pk}/cancel/", lambda lab: {}),
    "cancel a campaign": ApiBody(
        lambda lab: f"/api/campaigns/{lab.campaign.pk}/cancel/", lambda lab: {"configuration": 0}
    ),
    "retry a campaign": ApiBody(lambda lab: f"/api/campaigns/{lab.campaign.pk}/retry/", lambda lab: {}),
    "cancel a build": ApiBody(lambda lab: f"/api/builds/{lab.build.pk}/cancel/", lambda lab: {}),
    "remove a build": ApiBody(lambda lab: f"/api/builds/{lab.build.pk}/remove/", lambda lab: {}),
    "cancel a baseline": ApiBody(lambda lab: f"/api/baselines/{lab.baseline.pk}/cancel/", lambda lab: {}),
    "schedule a campaign": ApiBody(
        lambda lab: "/api/schedules/",
        lambda lab: {"campaign": lab.campaign.pk, "name": "junk", "enabled": True} | Crontab().as_dict(),
    ),
    "subscribe to a schedule": ApiBody(
        lambda lab: "/api/subscribers/",
        lambda lab: {"schedule": lab.schedule.pk, "email": "ops@example.org", "webhook_url": "http://127.0.0.1:9/hook"},
    ),
    "triage a change point": ApiBody(
        lambda lab: f"/api/change-points/{lab.change_point.pk}/",
        lambda lab: {"state": "expected", "note": "firmware 2.1 applied"},
        method="patch",
    ),
}
WRITTEN = (Run, Campaign, PgBuild, DeviceBaseline, AuditEvent, CampaignSchedule, ScheduleSubscriber)


def written(lab: Lab) -> list[object]:
    """What a refused body must leave as it was: how many rows of each kind, and the triage."""
    triage = StoredChangePoint.objects.filter(pk=lab.change_point.pk).values_list("state", "note").get()
    return [model._default_manager.count() for model in WRITTEN] + [triage]


TEXT_VARIABLES = {"filesystem", "mkfs_options", "mount_options", "pg_settings", "workload", "query_mode"}


@pytest.fixture
def lab(otto: User) -> Lab:
    host = make_host(name="lab1")
    device = make_device(host, name="hdd", kind="hdd", wipe_allowed=True, capacity_bytes=2**30)
    make_device(host, name="ram", kind="ram", path="/dev/disk/by-id/ram-1", wipe_allowed=True, capacity_bytes=2**30)
    pg = make_pg_install(host)
    campaign, configuration = make_campaign(otto, name="done")
    run = make_run(host, device, pg, queued_by=otto, campaign=campaign, configuration=configuration, repetition=1)
    build = make_build(host, otto, state=BuildState.FAILED)
    baseline = make_baseline(device, otto, state=BaselineState.DONE)
    schedule = schedule_create(campaign=campaign, name="nightly", crontab=CRON_PRESETS["nightly"].crontab, by=otto)
    return Lab(host, device, pg, run, campaign, build, baseline, schedule, make_change_point())


def body_with_junk(body: dict[str, Any], place: str, junk: str) -> str:
    """The body as JSON text with `junk` (JSON text itself) at `place`."""
    if place == WHOLE_BODY:
        return junk
    body = copy.deepcopy(body)
    if place.startswith("base."):
        body["base"][place.removeprefix("base.")] = JUNK
    elif place.startswith("variables."):
        # The junk first, beside the variable's values or, for text, beside "(none)": a valid
        # junk value then goes on to be expanded, checked and stored with the others.
        name = place.removeprefix("variables.")
        given = {v["field"]: v["values"] for v in body["variables"]}
        beside = given.pop(name, ["(none)"] if name in TEXT_VARIABLES else [])
        body["variables"] = [{"field": f, "values": values} for f, values in given.items()] + [
            {"field": name, "values": [JUNK, *beside]}
        ]
    else:
        body[place] = JUNK
    return json.dumps(body).replace(json.dumps(JUNK), junk)


def post_junk(otto: User, lab: Lab, what: str, place: str, junk: str) -> None:
    client = APIClient()
    client.force_authenticate(otto)
    target = API_BODIES[what]
    before = written(lab)

    send = getattr(client, target.method)
    response = send(target.path(lab), body_with_junk(target.body(lab), place, junk), content_type="application/json")

    said = f"{what}, {place} = {junk[:60]!r}"
    assert response.status_code < 500, f"{said}: {response.status_code}"
    assert response.status_code in (200, 201, 400), f"{said}: {response.status_code} {response.content[:200]!r}"
    if response.status_code == 400:
        assert written(lab) == before, f"{said}: refused, but wrote {before} -> {written(lab)}"
        assert response.json() and json.dumps(response.json()), f"{said}: refused without saying why"


@FIXTURES_PER_TEST
@given(what=st.sampled_from(list(API_BODIES)), data=st.data(), junk=junk_json_text)
def test_every_api_body_answers_junk_json_in_any_place_with_a_message(
    otto: User, lab: Lab, what: str, data: st.DataObject, junk: str
) -> None:
    place = data.draw(st.sampled_from(API_BODIES[what].places(lab)), label="place")
    post_junk(otto, lab, what, place, junk)


# ---- issue 29's cases, each sent as found: 500 before, 400 saying what is wrong after ----

WRONG_VALUES = ["abc", 1.5, {"a": 1}, None, True, [1, 2, 3], "8/x", "3+x"]
SWEPT_NUMBERS = {"scale": "scale", "clients": "clients", "client_host": "client host", "device": "device"}
BODIES_READ = ["create a run", "create a campaign", "queue a build", "queue a baseline", "cancel a campaign"]


def refusal_of(otto: User, lab: Lab, path: str, text: str) -> str:
    client = APIClient()
    client.force_authenticate(otto)
    before = written(lab)

    response = client.post(path, text, content_type="application/json")

    assert response.status_code == 400, (path, text[:80], response.status_code)
    assert written(lab) == before
    return json.dumps(response.json())


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "create"])
@pytest.mark.parametrize("variable", SWEPT_NUMBERS)
def test_a_swept_value_of_the_wrong_type_is_refused_naming_the_variable(
    otto: User, lab: Lab, variable: str, preview: bool
) -> None:
    for value in WRONG_VALUES:
        if variable == "client_host" and (value is None or value == [1, 2, 3]):
            continue  # null is pgbench on the server, [1, 2, 3] three client hosts: both are values it takes
        text = body_with_junk(campaign_body(lab, preview), f"variables.{variable}", json.dumps(value))

        said = refusal_of(otto, lab, "/api/campaigns/", text)

        assert SWEPT_NUMBERS[variable] in said and "is not" in said and "give" in said, (value, said)


@pytest.mark.parametrize(
    ("what", "place"),
    [("create a run", name) for name in ("filesystem", "workload", "query_mode")]
    + [("create a campaign", "order"), ("create a campaign", "base.filesystem"), ("queue a baseline", "ioengine")],
)
def test_a_lone_surrogate_in_a_choice_is_refused(otto: User, lab: Lab, what: str, place: str) -> None:
    target = API_BODIES[what]

    said = refusal_of(otto, lab, target.path(lab), body_with_junk(target.body(lab), place, '"\\ud800"'))

    assert "lone surrogate" in said and place.removeprefix("base.") in said, said


def test_a_nul_in_a_variable_is_refused_when_the_campaign_would_be_stored(otto: User, lab: Lab) -> None:
    """The NUL's combination is rejected, the other queued: its reason was to be stored as JSON."""
    text = body_with_junk(campaign_body(lab, False), "variables.mount_options", json.dumps("noatime\x00"))

    said = refusal_of(otto, lab, "/api/campaigns/", text)

    assert "NUL character" in said and "variables[2].values[0]" in said, said


@pytest.mark.parametrize("what", BODIES_READ)
def test_json_nested_50000_deep_is_refused_by_every_post(otto: User, lab: Lab, what: str) -> None:
    said = refusal_of(otto, lab, API_BODIES[what].path(lab), "[" * 50_000)

    assert f"at most {MAX_DEPTH} levels" in said, said


@pytest.mark.parametrize("body", ["[1]", '"x"', "1e999999", "null"])
def test_a_campaign_cancel_whose_body_is_no_object_is_refused(otto: User, lab: Lab, body: str) -> None:
    said = refusal_of(otto, lab, f"/api/campaigns/{lab.campaign.pk}/cancel/", body)

    assert "must be a JSON object" in said, said
