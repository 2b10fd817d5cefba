"""Generated junk in the API token form's fields, its page parameter and its revoke URL, in the
style of runs/tests/web/test_input_junk.py (its strategies): a 4xx saying why, or a valid
request answered as one; never a 5xx, and nothing made by a refused request."""

from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st
from knox.models import AuthToken

from runs.accounts.token_rules import TokenRefused, expiry_days, token_name
from runs.models import AuditEvent
from runs.tests.factories import make_user
from runs.tests.web.test_input_junk import FIXTURES_PER_TEST, NUMBERS_THAT_BREAK_THINGS, junk_text

pytestmark = pytest.mark.django_db
FIELDS = ("name", "expires_days")
VALID = {"name": "CI", "expires_days": "30"}


@pytest.fixture
def vera() -> User:
    return make_user("vera", "viewer")


@pytest.fixture
def vera_signed_in(vera: User) -> Client:
    client = Client()
    client.force_login(vera)
    return client


def post_form(client: Client, field: str, value: str) -> None:
    before = AuthToken.objects.count(), AuditEvent.objects.count()

    response = client.post(reverse("tokens"), VALID | {field: value})

    made = AuthToken.objects.count() - before[0], AuditEvent.objects.count() - before[1]
    what = f"{field}={value[:50]!r}"
    assert response.status_code in (200, 400), f"{what}: {response.status_code}"
    if response.status_code == 400:
        assert made == (0, 0), f"{what}: refused but {made} made"
        assert 'class="error"' in response.content.decode(), f"{what}: refused without saying why"
    else:
        assert made == (1, 1), what
        assert _acceptable(field, value), f"{what}: accepted"


def _acceptable(field: str, value: str) -> bool:
    """What the rules take (a NUL is refused before them, by Django's field)."""
    try:
        (token_name if field == "name" else expiry_days)(value)
    except TokenRefused:
        return False
    return "\x00" not in value


@pytest.mark.parametrize("field", FIELDS)
def test_the_token_form_answers_numbers_that_break_things_in_every_field(vera_signed_in: Client, field: str) -> None:
    for value in NUMBERS_THAT_BREAK_THINGS:
        post_form(vera_signed_in, field, value)


@FIXTURES_PER_TEST
@given(field=st.sampled_from(FIELDS), value=junk_text)
def test_the_token_form_answers_junk_in_any_field_with_a_message(
    vera_signed_in: Client, field: str, value: str
) -> None:
    post_form(vera_signed_in, field, value)


@FIXTURES_PER_TEST
@given(value=junk_text)
def test_the_tokens_page_and_revoke_url_answer_junk_without_a_server_error(vera_signed_in: Client, value: str) -> None:
    listing = vera_signed_in.get(reverse("tokens"), {"page": value})
    revoke = [getattr(vera_signed_in, method)(f"/tokens/{quote(value, safe='')}/revoke") for method in ("get", "post")]

    assert listing.status_code in (200, 400), listing.status_code
    assert all(response.status_code in (400, 404) for response in revoke), [r.status_code for r in revoke]
