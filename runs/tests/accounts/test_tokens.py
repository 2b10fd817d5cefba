"""API tokens each user makes (runs.accounts): the service, the page and its revoke, and
`manage.py token_create`. A token is proved by using it on the API."""

import os
import re
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from runs.accounts.selectors import token_page
from runs.accounts.services.tokens import token_create, token_revoke
from runs.accounts.token_rules import TokenRefused
from runs.models import ApiTokenName, AuditAction, AuditEvent
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_user

pytestmark = pytest.mark.django_db


def api_status(secret: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client.get("/api/hosts/").status_code


def audited(action: AuditAction) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


# ---- the service and the selector ----


def test_a_made_token_works_on_the_api_is_named_and_audited(users: dict[str, User]) -> None:
    token, secret = token_create(user=users["vera"], name="  CI on build-7 ", expires_days="30", by=users["vera"])

    assert api_status(secret) == 200
    assert ApiTokenName.objects.get(token=token).name == "CI on build-7"
    assert token.expiry is not None and timedelta(days=29, hours=23) < token.expiry - timezone.now() <= timedelta(30)
    assert secret.startswith(token.token_key) and secret not in str(AuthToken.objects.filter(pk=token.pk).values())
    [event] = audited(AuditAction.API_TOKEN_CREATED)
    assert (
        event.actor_name == "vera" and "'CI on build-7'" in event.object_repr and token.token_key in event.object_repr
    )
    assert secret not in event.object_repr + event.message


def test_an_expired_token_is_refused_by_the_api(users: dict[str, User]) -> None:
    token, secret = token_create(user=users["vera"], name="short", expires_days="1", by=users["vera"])
    AuthToken.objects.filter(pk=token.pk).update(expiry=timezone.now() - timedelta(seconds=1))

    assert api_status(secret) == 401
    assert not AuthToken.objects.filter(pk=token.pk).exists()  # knox removed it, and its name went with it
    assert not ApiTokenName.objects.exists()


def test_a_token_without_expiry_never_expires(users: dict[str, User]) -> None:
    token, _ = token_create(user=users["vera"], name="forever", by=users["vera"])
    assert token.expiry is None


@pytest.mark.parametrize(
    ("name", "days", "message"),
    [
        ("", "", "needs a name (1 to 100 characters)"),
        ("   ", "", "needs a name"),
        ("x" * 101, "", "at most 100 characters, not 101"),
        ("two\nlines", "", "one line of text"),
        ("ok", "0", "whole number of days from 1 to 365, or blank"),
        ("ok", "366", "from 1 to 365"),
        ("ok", "1.5", "not '1.5'"),
        ("ok", "²", "from 1 to 365"),
        ("ok", "-3", "from 1 to 365"),
        ("ok", "9" * 5000, "from 1 to 365"),
    ],
)
def test_bad_input_is_refused_saying_what_is_allowed_and_nothing_is_made(
    users: dict[str, User], name: str, days: str, message: str
) -> None:
    with pytest.raises(TokenRefused, match=re.escape(message)):
        token_create(user=users["vera"], name=name, expires_days=days, by=users["vera"])
    assert not AuthToken.objects.exists() and not AuditEvent.objects.exists()


def test_each_sees_their_own_and_an_admin_sees_everyones(users: dict[str, User]) -> None:
    token_create(user=users["vera"], name="vera's", by=users["vera"])
    token_create(user=users["otto"], name="otto's", by=users["otto"])
    AuthToken.objects.create(users["otto"])  # made in the admin: no name

    names = {who: [row.name for row in token_page(users[who], 1)[2]] for who in ("vera", "otto", "ada")}

    assert names == {"vera": ["vera's"], "otto": ["", "otto's"], "ada": ["", "otto's", "vera's"]}


def test_an_owner_revokes_their_token_and_it_stops_working(users: dict[str, User]) -> None:
    token, secret = token_create(user=users["vera"], name="laptop", by=users["vera"])

    token_revoke(token=token, by=users["vera"])

    assert api_status(secret) == 401
    assert not ApiTokenName.objects.exists()
    [event] = audited(AuditAction.API_TOKEN_REVOKED)
    assert event.actor_name == "vera" and "'laptop'" in event.object_repr


def test_an_admin_revokes_anothers_token_and_another_user_cannot(users: dict[str, User]) -> None:
    token, secret = token_create(user=users["vera"], name="laptop", by=users["vera"])

    with pytest.raises(TokenRefused, match="Only vera, whose token it is, or an admin"):
        token_revoke(token=token, by=users["otto"])
    assert api_status(secret) == 200
    token_revoke(token=token, by=users["ada"])

    assert api_status(secret) == 401
    assert [e.actor_name for e in audited(AuditAction.API_TOKEN_REVOKED)] == ["ada"]


# ---- the page ----


def test_the_page_makes_a_token_shows_it_once_and_lists_it(client_for: ClientFactory) -> None:
    vera = client_for("vera")
    made = vera.post(reverse("tokens"), {"name": "CI", "expires_days": "7"})
    secret = made.context["new"]["secret"]
    again = vera.get(reverse("tokens"))

    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    assert secret in made.content.decode() and "Copy it now" in made.content.decode()
    assert api_status(secret) == 200
    assert secret not in again.content.decode() and "CI" in again.content.decode()
    assert secret[:15] in again.content.decode()  # knox's prefix, to recognise it


def test_the_form_sent_again_makes_no_second_token_and_says_so(client_for: ClientFactory) -> None:
    vera = client_for("vera")
    once = vera.get(reverse("tokens")).context["form"]["once"].initial
    made = vera.post(reverse("tokens"), {"name": "CI", "expires_days": "", "once": once})
    reloaded = vera.post(reverse("tokens"), {"name": "CI", "expires_days": "", "once": once})
    fresh = made.context["form"]["once"].initial
    another = vera.post(reverse("tokens"), {"name": "CI", "expires_days": "", "once": fresh})

    assert made.status_code == 200 and made.context["new"] is not None
    assert reloaded.status_code == 409 and reloaded.context["new"] is None
    assert "This form was sent already" in reloaded.content.decode()
    assert another.status_code == 200 and another.context["new"] is not None  # a fresh form: a new token
    assert AuthToken.objects.count() == 2


def test_a_script_posting_without_the_forms_key_makes_a_token_each_time(client_for: ClientFactory) -> None:
    vera = client_for("vera")
    statuses = [vera.post(reverse("tokens"), {"name": "CI"}).status_code for _ in range(2)]

    assert statuses == [200, 200] and AuthToken.objects.count() == 2


def test_the_page_refuses_bad_input_beside_the_field_and_makes_nothing(client_for: ClientFactory) -> None:
    response = client_for("vera").post(reverse("tokens"), {"name": "", "expires_days": "400"})

    assert response.status_code == 400
    text = response.content.decode()
    assert "No token was made." in text and "needs a name" in text and "from 1 to 365" in text
    assert not AuthToken.objects.exists()


def test_revoking_asks_first_naming_the_token_then_revokes(client_for: ClientFactory, users: dict[str, User]) -> None:
    token, secret = token_create(user=users["vera"], name="laptop", by=users["vera"])
    url = reverse("token-revoke", args=[token.digest])
    vera = client_for("vera")

    asked = vera.get(url)
    assert api_status(secret) == 200  # asking revokes nothing
    done = vera.post(url, follow=True)

    assert "laptop" in asked.content.decode() and f"{token.token_key}…" in asked.content.decode()
    assert "revoked: it no longer works" in done.content.decode()
    assert api_status(secret) == 401
    assert vera.post(url).status_code == 404  # a second revoke: gone


@pytest.mark.parametrize(("who", "status"), [("nora", 404), ("otto", 404), ("ada", 302)])
def test_anothers_token_is_not_found_unless_one_is_an_admin(
    client_for: ClientFactory, users: dict[str, User], who: str, status: int
) -> None:
    token, _ = token_create(user=users["vera"], name="laptop", by=users["vera"])
    response = client_for(who).post(reverse("token-revoke", args=[token.digest]))

    assert response.status_code == status
    assert AuthToken.objects.exists() == (status == 404)


def test_the_user_menu_links_the_page(client_for: ClientFactory) -> None:
    assert f'href="{reverse("tokens")}"' in client_for("vera").get(reverse("runs")).content.decode()


# ---- manage.py token_create ----


def command(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("token_create", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_prints_only_the_token() -> None:
    make_user("ci", "operator")

    out, err = command("--user", "ci", "--name", "lab setup", "--expires-days", "90")

    secret = out.removesuffix("\n")
    assert out == secret + "\n" and len(secret) == 64 and err == ""
    assert api_status(secret) == 200
    row = ApiTokenName.objects.select_related("token").get()
    assert row.name == "lab setup" and row.token.expiry is not None
    [event] = audited(AuditAction.API_TOKEN_CREATED)
    assert event.actor_name == "benchlab" and "manage.py token_create" in event.message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody", "--name", "x"], "There is no user 'nobody'"),
        (["--user", "ci\x00", "--name", "x"], "There is no user"),
        (["--user", "ci", "--name", ""], "needs a name"),
        (["--user", "ci", "--name", "x" * 101], "at most 100 characters"),
        (["--user", "ci", "--name", "x", "--expires-days", "0"], "from 1 to 365"),
        (["--user", "ci", "--name", "x", "--expires-days", "soon"], "not 'soon'"),
    ],
)
def test_the_command_refuses_with_a_message_and_makes_nothing(args: list[str], message: str) -> None:
    make_user("ci", "operator")
    with pytest.raises(CommandError, match=re.escape(message)):
        command(*args)
    assert not AuthToken.objects.exists()


def test_the_command_exits_non_zero_with_the_message_on_stderr() -> None:
    # As a script runs it: call_command raises, while manage.py prints and exits (and would close
    # the test's connection: run_from_argv closes them all), so in a process of its own.
    done = subprocess.run(
        [sys.executable, "manage.py", "token_create", "--user", "nobody", "--name", "x"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
        env=_test_database_environment(),
    )

    assert done.returncode != 0 and done.stdout == ""
    assert "There is no user 'nobody': no token was made." in done.stderr


def _test_database_environment() -> dict[str, str]:
    settings_dict = connection.settings_dict
    url = (
        f"postgres://{settings_dict['USER']}:{settings_dict['PASSWORD']}@{settings_dict['HOST']}:"
        f"{settings_dict['PORT']}/{settings_dict['NAME']}"
    )
    return os.environ | {"DATABASE_URL": url}
