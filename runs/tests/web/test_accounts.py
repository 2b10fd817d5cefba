"""Accounts and the API's doors: login attempts are throttled per user and address, API calls
per user, API tokens are kept only as hashes, every page carries a Content-Security-Policy,
and cookies are secure when benchlab is served over HTTPS."""

import re
from ipaddress import ip_network

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from knox.models import AuthToken
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle, UserRateThrottle

from runs.models import Run
from runs.tests.factories import make_device, make_host, make_pg_install, make_user, run_form_fields
from runs.tests.project.test_settings import start_django

pytestmark = pytest.mark.django_db
PASSWORD = "otto-has-a-long-password"


def log_in(username: str, password: str, address: str) -> int:
    response = Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})
    return response.status_code  # 302 on success, 200 with the form again on a wrong password


def test_five_wrong_passwords_lock_that_user_from_that_address_only() -> None:
    make_user("otto", "operator", password=PASSWORD)
    make_user("vera", "viewer", password=PASSWORD)

    wrong = [log_in("otto", "guess", "10.0.0.5") for _ in range(5)]
    locked = Client(REMOTE_ADDR="10.0.0.5").post("/accounts/login/", {"username": "otto", "password": PASSWORD})

    assert wrong == [200] * 4 + [429]  # the fifth failure already answers with the lock
    assert locked.status_code == 429  # and then even the right password
    assert "Too many login attempts" in locked.content.decode()
    assert "logging in is paused for 0:15:00" in locked.content.decode()
    assert log_in("otto", PASSWORD, "10.0.0.6") == 302  # the same user from another address
    assert log_in("vera", PASSWORD, "10.0.0.5") == 302  # another user from the same address


def test_a_right_password_before_the_limit_resets_the_count() -> None:
    make_user("otto", "operator", password=PASSWORD)

    outcomes = [log_in("otto", "guess", "10.0.0.5") for _ in range(4)]
    outcomes.append(log_in("otto", PASSWORD, "10.0.0.5"))
    outcomes += [log_in("otto", "guess", "10.0.0.5") for _ in range(4)]

    assert outcomes == [200] * 4 + [302] + [200] * 4
    assert log_in("otto", PASSWORD, "10.0.0.5") == 302


def test_queueing_through_the_api_is_throttled_per_user_with_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"queue": "2/hour"})
    host = make_host()
    form = run_form_fields(host, make_device(host, wipe_allowed=True, capacity_bytes=2**30), make_pg_install(host))
    body = form | {"rate_limit_tps": None, "random_seed": None, "client_host": None}  # JSON says "none" with null
    otto, ada = APIClient(), APIClient()
    otto.force_authenticate(make_user("otto", "operator"))
    ada.force_authenticate(make_user("ada", "admin"))

    statuses = [otto.post("/api/runs/", body, format="json").status_code for _ in range(3)]
    throttled = otto.post("/api/runs/", body, format="json")
    others = ada.post("/api/runs/", body, format="json")
    reading = otto.get("/api/runs/")

    assert statuses == [201, 201, 429]
    assert "Request was throttled" in throttled.json()["detail"]
    assert others.status_code == 201 and reading.status_code == 200  # another user; reading has its own rate
    assert Run.objects.count() == 3


def test_every_api_request_counts_against_the_users_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/min"})
    client = APIClient()
    client.force_authenticate(make_user("vera", "viewer"))

    statuses = [client.get("/api/hosts/").status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 429]


def test_an_api_token_is_kept_only_as_a_hash_and_the_hash_opens_nothing() -> None:
    vera = make_user("vera", "viewer")
    stored, token = AuthToken.objects.create(vera)

    with_token, with_hash = APIClient(), APIClient()
    with_token.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    with_hash.credentials(HTTP_AUTHORIZATION=f"Token {stored.digest}")

    assert token not in {stored.digest, stored.token_key} and not stored.digest.startswith(token)
    assert with_token.get("/api/hosts/").status_code == 200
    assert with_hash.get("/api/hosts/").status_code == 401


def test_a_superuser_creates_a_token_in_the_admin_and_sees_it_once() -> None:
    User.objects.create_superuser("root", password=None)
    vera = make_user("vera", "viewer")
    admin = Client()
    admin.force_login(User.objects.get(username="root"))

    created = admin.post("/admin/knox/authtoken/add/", {"user": vera.pk, "expiry": ""}, follow=True)
    shown = re.search(r"TOKEN (\w+)", created.content.decode())
    listing = admin.get("/admin/knox/authtoken/").content.decode()

    assert shown is not None
    token = shown.group(1)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/runs/").status_code == 200
    assert token not in listing  # the list shows its first characters, never the token
    assert AuthToken.objects.get(user=vera).token_key in listing


def test_every_page_carries_a_content_security_policy() -> None:
    client = Client()
    client.force_login(make_user("ada", "admin"))

    for path in ("/", "/runs/", "/runs/new/", "/admin/", "/accounts/login/"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy, path


SECURITY_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, s.SECURE_PROXY_SSL_HEADER)"
)


@pytest.mark.parametrize(
    "https, printed",
    [
        ("true", "True True True ('HTTP_X_FORWARDED_PROTO', 'https')"),
        ("false", "False False False None"),
    ],
)
def test_cookies_are_secure_and_hsts_is_sent_when_served_over_https(https: str, printed: str) -> None:
    result = start_django({"BENCHLAB_HTTPS": https}, code=SECURITY_SETTINGS)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == printed


@override_settings(TRUSTED_PROXIES=(ip_network("10.0.0.1"),))
def test_behind_a_proxy_the_lock_is_per_client_address_the_proxy_names() -> None:
    make_user("otto", "operator", password=PASSWORD)

    def via_proxy(client_address: str, password: str) -> int:
        # A client may send its own X-Forwarded-For; the proxy appends the address it saw.
        forwarded = f"6.6.6.6, {client_address}"
        client = Client(REMOTE_ADDR="10.0.0.1", headers={"X-Forwarded-For": forwarded})
        return client.post("/accounts/login/", {"username": "otto", "password": password}).status_code

    locked = [via_proxy("192.0.2.7", "guess") for _ in range(5)]

    assert locked[-1] == 429
    assert via_proxy("192.0.2.8", PASSWORD) == 302  # another client behind the same proxy
    assert via_proxy("192.0.2.7", PASSWORD) == 429
