"""Generated junk in every form field and API parameter: always a 4xx with a message (or a
valid request, answered as one), never a 5xx, and nothing queued by a refused request.

Hypothesis draws a field and a value meant to break things: digits that are not ASCII ("²"),
numbers past bigint and past Python's 4,300-digit limit, infinities, NUL bytes, huge strings,
JSON of the wrong type.
"""

import asyncio
import json
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from runs.forms import RUN_FIELDS
from runs.models import Run, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields

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


API_QUERY_PARAMETERS = [
    ("/api/runs/", name) for name in ("host", "device", "pg_install", "state", "filesystem", "workload")
] + [("/api/runs/", "limit"), ("/api/runs/", "offset"), ("/api/devices/", "host"), ("/api/hosts/", "limit")]


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

    assert again.status_code in (200, 400, 404), again.status_code
    for stream in {id(after): after, id(resumed): resumed}.values():
        assert stream.status_code in (200, 400), stream.status_code
        if stream.status_code == 200:
            async_to_sync(read_to_the_end)(stream)
    # A NUL anywhere in a request is refused before any page sees it (400).
    assert detail.status_code in (200, 400, 404) and api_detail.status_code in (200, 400, 404)
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
