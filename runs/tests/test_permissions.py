"""The permission matrix: every URL, every role.

`test_the_matrix_covers_every_url` fails when a URL exists that the matrix does not list, so
no page can be shipped without deciding who may see it.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authtoken.models import Token

from runs.models import Device, Host, PgInstall, Run
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

LOGIN, FORBIDDEN, NOT_FOUND, ALLOWED = "login", "forbidden", "not found", "allowed"
UNAUTHORIZED = "unauthorized"  # the API answers 401 instead of redirecting to the login page
ROLES = ["anonymous", "nora", "vera", "otto", "ada"]  # no role, viewer, operator, admin


@dataclass(frozen=True)
class Objects:
    host: Host
    device: Device
    pg: PgInstall
    group: Group
    user: User
    run: Run
    token_user: User


@dataclass(frozen=True)
class Row:
    expected: list[str]  # per role, in ROLES order
    args: Callable[[Objects], list[Any]] = lambda objects: []
    method: str = "get"
    query: dict[str, str] | None = None


PAGE = [LOGIN, FORBIDDEN, ALLOWED, ALLOWED, ALLOWED]  # viewers and up
OPERATE = [LOGIN, FORBIDDEN, FORBIDDEN, ALLOWED, ALLOWED]  # operators and admins
API_READ = [UNAUTHORIZED, FORBIDDEN, ALLOWED, ALLOWED, ALLOWED]
API_OPERATE = [UNAUTHORIZED, FORBIDDEN, FORBIDDEN, ALLOWED, ALLOWED]
ADMIN = [LOGIN, FORBIDDEN, FORBIDDEN, FORBIDDEN, ALLOWED]  # the admin role only
ADMIN_BUT_NOT_USERS = [LOGIN, FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN]  # superusers manage accounts
SIGNED_IN = [LOGIN, ALLOWED, ALLOWED, ALLOWED, ALLOWED]


def model_rows(app_model: str, expected: list[str], obj: Callable[[Objects], Any]) -> dict[str, Row]:
    with_pk = lambda objects: [obj(objects).pk]  # noqa: E731
    return {
        f"admin:{app_model}_changelist": Row(expected),
        f"admin:{app_model}_add": Row(expected),
        f"admin:{app_model}_change": Row(expected, with_pk),
        f"admin:{app_model}_delete": Row(expected, with_pk),
        f"admin:{app_model}_history": Row(expected, with_pk),
    }


MATRIX: dict[str, Row] = {
    "home": Row(PAGE),
    "health": Row(PAGE),
    "health-json": Row(PAGE),
    "runs": Row(PAGE),
    "runs-events": Row(PAGE),
    "run-new": Row(OPERATE),
    "run-detail": Row(PAGE, lambda objects: [objects.run.pk]),
    "run-samples-json": Row(PAGE, lambda objects: [objects.run.pk]),
    "run-events": Row(PAGE, lambda objects: [objects.run.pk]),
    "run-artifact": Row(PAGE, lambda objects: [objects.run.pk, "pgbench.stdout.txt"]),
    "run-cancel": Row(OPERATE, lambda objects: [objects.run.pk], method="post"),
    "api:api-root": Row(API_READ),
    "api:host-list": Row(API_READ),
    "api:host-detail": Row(API_READ, lambda objects: [objects.host.pk]),
    "api:device-list": Row(API_READ),
    "api:device-detail": Row(API_READ, lambda objects: [objects.device.pk]),
    "api:pginstall-list": Row(API_READ),
    "api:pginstall-detail": Row(API_READ, lambda objects: [objects.pg.pk]),
    "api:run-list": Row(API_READ),
    "api:run-detail": Row(API_READ, lambda objects: [objects.run.pk]),
    "api:run-samples": Row(API_READ, lambda objects: [objects.run.pk]),
    "api:run-cancel": Row(API_OPERATE, lambda objects: [objects.run.pk], method="post"),
    "login": Row([ALLOWED] * 5),
    "logout": Row([LOGIN] * 5, method="post"),  # everyone ends on the login page
    "password_change": Row(SIGNED_IN),
    "password_change_done": Row(SIGNED_IN),
    "admin:index": Row(ADMIN),
    "admin:login": Row(ADMIN),
    # Logging out through the admin ends on the login page too; others are bounced to the admin index.
    "admin:logout": Row([LOGIN, FORBIDDEN, FORBIDDEN, FORBIDDEN, LOGIN], method="post"),
    "admin:password_change": Row(ADMIN),
    "admin:password_change_done": Row(ADMIN),
    "admin:jsi18n": Row(ADMIN),
    "admin:autocomplete": Row(
        ADMIN, query={"app_label": "runs", "model_name": "device", "field_name": "host", "term": "lab"}
    ),
    # Hosts have no public page of their own, so "view on site" finds nothing even for admins.
    "admin:view_on_site": Row(
        [LOGIN, FORBIDDEN, FORBIDDEN, FORBIDDEN, NOT_FOUND],
        lambda objects: [ContentType.objects.get_for_model(Host).pk, objects.host.pk],
    ),
    "admin:app_list": Row(ADMIN, lambda objects: ["runs"]),
    **model_rows("runs_host", ADMIN, lambda objects: objects.host),
    **model_rows("runs_device", ADMIN, lambda objects: objects.device),
    **model_rows("runs_pginstall", ADMIN, lambda objects: objects.pg),
    **model_rows("auth_user", ADMIN_BUT_NOT_USERS, lambda objects: objects.user),
    **model_rows("auth_group", ADMIN_BUT_NOT_USERS, lambda objects: objects.group),
    "admin:auth_user_password_change": Row(ADMIN_BUT_NOT_USERS, lambda objects: [objects.user.pk]),
    # API tokens are accounts' keys: superusers manage them (the admin shows a token by its user).
    **model_rows("authtoken_tokenproxy", ADMIN_BUT_NOT_USERS, lambda objects: objects.token_user),
}


def named_patterns(resolver: URLResolver, namespace: str = "") -> Iterator[str]:
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from named_patterns(pattern, pattern.namespace or namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def outcome(client: Client, method: str, url: str, query: dict[str, str] | None) -> str:
    response = getattr(client, method)(url, query or {}, follow=True)
    if response.redirect_chain and response.request["PATH_INFO"] == reverse("login"):
        return LOGIN
    if response.status_code == 401:
        return UNAUTHORIZED
    if response.status_code == 403:
        return FORBIDDEN
    if response.status_code == 404:
        return NOT_FOUND
    # Health pages answer 503 when a component is down; that is still an answer to the user.
    assert response.status_code in (200, 503), f"{url}: unexpected status {response.status_code}"
    return ALLOWED


def test_the_matrix_covers_every_url() -> None:
    assert set(named_patterns(get_resolver())) == set(MATRIX)


@pytest.mark.django_db
@pytest.mark.parametrize("url_name", sorted(MATRIX))
def test_each_role_gets_what_the_matrix_says(url_name: str, client_for: ClientFactory) -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    run = make_run(host, device, pg)
    nora = client_for.users["nora"]
    Token.objects.create(user=nora)
    objects = Objects(host, device, pg, Group.objects.get(name="viewer"), nora, run, nora)
    row = MATRIX[url_name]
    url = reverse(url_name, args=row.args(objects))

    got = [outcome(client_for(None if role == "anonymous" else role), row.method, url, row.query) for role in ROLES]

    assert got == row.expected


@pytest.mark.django_db
def test_an_admin_who_is_not_staff_logs_in_on_the_one_login_page_and_reaches_the_admin() -> None:
    make_user("ada", "admin", password="ada-has-a-long-password")
    client = Client()

    first = client.get("/admin/", follow=True)
    client.post(reverse("login"), {"username": "ada", "password": "ada-has-a-long-password"})
    admin = client.get("/admin/")

    assert first.request["PATH_INFO"] == reverse("login")
    assert admin.status_code == 200
    assert "Hardware inventory" in admin.content.decode()


@pytest.mark.django_db
def test_a_viewer_cannot_change_the_inventory_by_posting(client_for: ClientFactory) -> None:
    host = make_host()
    response = client_for("vera").post(
        reverse("admin:runs_host_change", args=[host.pk]), {"name": "renamed", "transport": "local"}, follow=True
    )

    assert response.status_code == 403
    host.refresh_from_db()
    assert host.name == "lab1"


@pytest.mark.django_db
def test_an_operator_may_queue_and_cancel_runs_but_a_viewer_may_not(client_for: ClientFactory) -> None:
    users = client_for.users
    assert users["otto"].has_perms(["runs.queue_run", "runs.cancel_run"])
    assert users["ada"].has_perms(["runs.queue_run", "runs.cancel_run", "runs.change_device"])
    assert not users["vera"].has_perm("runs.queue_run")
    assert not users["otto"].has_perm("runs.change_host")
