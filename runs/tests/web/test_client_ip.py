"""The client's address: the connection's, unless it comes from a proxy named in
BENCHLAB_TRUSTED_PROXIES; then the right-most address in X-Forwarded-For that no trusted proxy
has. One function decides it for login lockouts, the audit log and the API's throttles, and the
served benchlab (scripts/web's uvicorn) lets no local client choose its own address."""

import http.cookiejar
import ipaddress
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import RequestFactory, override_settings
from rest_framework.request import Request
from rest_framework.settings import api_settings

from benchlab.client_ip import client_ip
from runs.models import AuditAction, AuditEvent
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web_server import WebServer, uvicorn

PASSWORD = "otto-has-a-long-password"
LOCKED = 429  # axes: the fifth failure and everything after it


def trusting(*proxies: str) -> Any:
    return override_settings(TRUSTED_PROXIES=tuple(ipaddress.ip_network(proxy) for proxy in proxies))


def from_(peer: str, forwarded: str | None = None) -> Any:
    headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
    return RequestFactory(REMOTE_ADDR=peer, headers=headers).get("/")


# ---- the one function ----


def test_without_trusted_proxies_the_connections_address_is_the_clients_whatever_the_header_says() -> None:
    assert client_ip(from_("127.0.0.1", "198.51.100.7")) == "127.0.0.1"
    assert client_ip(from_("10.0.0.1", "6.6.6.6, 198.51.100.7")) == "10.0.0.1"


@trusting("10.0.0.1")
def test_from_a_trusted_proxy_the_address_it_appended_is_the_clients_not_what_the_client_sent() -> None:
    assert client_ip(from_("10.0.0.1", "198.51.100.7")) == "198.51.100.7"
    assert client_ip(from_("10.0.0.1", "6.6.6.6, 198.51.100.7")) == "198.51.100.7"
    assert client_ip(from_("10.0.0.2", "198.51.100.7")) == "10.0.0.2"  # not a trusted proxy


@trusting("10.0.0.0/24", "2001:db8::/32")
def test_a_chain_of_trusted_proxies_is_read_from_the_right_past_their_own_entries() -> None:
    assert client_ip(from_("10.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.9")) == "198.51.100.7"
    assert client_ip(from_("2001:db8::1", "6.6.6.6, 2001:db8::2, 10.0.0.3")) == "6.6.6.6"
    assert client_ip(from_("10.0.0.1", "10.0.0.7, 10.0.0.9")) == "10.0.0.7"  # all proxies: the furthest


@trusting("10.0.0.1")
def test_a_missing_or_garbled_header_from_a_trusted_proxy_gives_the_proxys_address() -> None:
    assert client_ip(from_("10.0.0.1")) == "10.0.0.1"
    assert client_ip(from_("10.0.0.1", "")) == "10.0.0.1"
    assert client_ip(from_("10.0.0.1", "198.51.100.7, unknown")) == "10.0.0.1"
    assert client_ip(from_("10.0.0.1", "unknown, 198.51.100.7")) == "198.51.100.7"


@trusting("10.0.0.1")
@override_settings(CLIENT_IP_HEADER="X-Real-IP")
def test_the_proxys_header_can_be_another_one() -> None:
    request = RequestFactory(REMOTE_ADDR="10.0.0.1", headers={"X-Real-IP": "192.0.2.7"}).get("/")
    assert client_ip(request) == "192.0.2.7"
    assert client_ip(from_("10.0.0.1", "198.51.100.7")) == "10.0.0.1"  # X-Forwarded-For is not read


@pytest.mark.parametrize("throttle", api_settings.DEFAULT_THROTTLE_CLASSES, ids=lambda cls: cls.__name__)
def test_the_api_throttles_key_on_the_same_address(throttle: type) -> None:
    request = Request(from_("127.0.0.1", "198.51.100.7"))

    assert throttle().get_ident(request) == "127.0.0.1"  # DRF's own get_ident: 198.51.100.7
    with trusting("127.0.0.1"):
        assert throttle().get_ident(request) == "198.51.100.7"


# ---- the served benchlab, through scripts/web's uvicorn ----


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an answer to look at, not to follow


class Visitor:
    """A browser-less client of the served benchlab: its cookies, and the status of each answer."""

    def __init__(self, server: WebServer) -> None:
        self.base = server.address
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), NoRedirects())
        self.opener.open(f"{self.base}/accounts/login/").read()  # sets the CSRF cookie

    def post(self, path: str, fields: dict[str, Any], forwarded: str | None = None) -> int:
        token = next(cookie.value for cookie in self.cookies if cookie.name == "csrftoken")
        body = urllib.parse.urlencode(fields | {"csrfmiddlewaretoken": token}).encode()
        headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
        try:
            with self.opener.open(urllib.request.Request(f"{self.base}{path}", data=body, headers=headers)) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return error.code

    def log_in(self, password: str, forwarded: str | None = None) -> int:
        return self.post("/accounts/login/", {"username": "otto", "password": password}, forwarded)


@pytest.fixture
def served() -> Iterator[WebServer]:
    with uvicorn() as server:
        yield server


@pytest.fixture
def served_behind_a_proxy() -> Iterator[WebServer]:
    with uvicorn(BENCHLAB_TRUSTED_PROXIES="127.0.0.1") as server:
        yield server


def share_a_run(visitor: Visitor, forwarded: str) -> str | None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host))
    assert visitor.post("/shares/new", {"kind": "run", "target": run.pk}, forwarded) == 302
    return AuditEvent.objects.get(action=AuditAction.SHARE_CREATED).address


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_local_client_cannot_pick_its_address_to_escape_or_dodge_a_lockout(served: WebServer) -> None:
    make_user("otto", "operator", password=PASSWORD)
    visitor = Visitor(served)

    wrong = [visitor.log_in("guess", forwarded=f"198.51.100.{n}") for n in range(8)]
    right = visitor.log_in(PASSWORD, forwarded="203.0.113.9")

    assert wrong == [200] * 4 + [LOCKED] * 4  # the header changes nothing: one address, locked
    assert right == LOCKED


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_audit_log_records_the_connections_address_not_a_forwarded_one(served: WebServer) -> None:
    make_user("otto", "operator", password=PASSWORD)
    visitor = Visitor(served)
    assert visitor.log_in(PASSWORD) == 302

    assert share_a_run(visitor, forwarded="6.6.6.6") == "127.0.0.1"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_behind_a_trusted_proxy_the_address_it_appended_is_locked_and_recorded(
    served_behind_a_proxy: WebServer,
) -> None:
    make_user("otto", "operator", password=PASSWORD)
    visitor = Visitor(served_behind_a_proxy)

    # The client sends its own X-Forwarded-For (left); the proxy appends the address it saw.
    wrong = [visitor.log_in("guess", forwarded=f"6.6.6.{n}, 198.51.100.7") for n in range(5)]
    locked = visitor.log_in(PASSWORD, forwarded="7.7.7.7, 198.51.100.7")
    other_client = visitor.log_in(PASSWORD, forwarded="198.51.100.8")

    assert wrong == [200] * 4 + [LOCKED]
    assert locked == LOCKED
    assert other_client == 302
    assert share_a_run(visitor, forwarded="6.6.6.6, 198.51.100.8") == "198.51.100.8"
