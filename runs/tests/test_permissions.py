"""The permission matrix: every URL, every role.

Adding a URL without adding it here fails `test_the_matrix_covers_every_url`, so no page
can be shipped without deciding who may see it.
"""

from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from runs.models import Host
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install

LOGIN, FORBIDDEN, ALLOWED = "login", "forbidden", "allowed"
ROLES = ["anonymous", "nora", "vera", "otto", "ada"]

# url name -> expected outcome for anonymous, no role, viewer, operator, admin.
PAGES = {
    "home": [LOGIN, FORBIDDEN, ALLOWED, ALLOWED, ALLOWED],
    "health": [LOGIN, FORBIDDEN, ALLOWED, ALLOWED, ALLOWED],
    "health-json": [LOGIN, FORBIDDEN, ALLOWED, ALLOWED, ALLOWED],
}
# Django's own account pages are open to everybody (that is how one logs in).
ACCOUNT_PAGES = {"login", "logout", "password_change", "password_change_done", "password_reset",
                 "password_reset_done", "password_reset_confirm", "password_reset_complete"}  # fmt: skip
# The inventory admin: only the admin role (and superusers).
ADMIN_EXPECTED = [LOGIN, LOGIN, LOGIN, LOGIN, ALLOWED]


def named_patterns(resolver: URLResolver, namespace: str = "") -> Iterator[str]:
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from named_patterns(pattern, pattern.namespace or namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def outcome(response_status: int, location: str) -> str:
    if response_status == 302 and "login" in location:
        return LOGIN
    if response_status == 403:
        return FORBIDDEN
    # Health pages answer 503 when a component is down; that is still an answer to the user.
    assert response_status in (200, 503), f"unexpected status {response_status}"
    return ALLOWED


def test_the_matrix_covers_every_url() -> None:
    names = {name for name in named_patterns(get_resolver()) if not name.startswith("admin:")}
    assert names == set(PAGES) | ACCOUNT_PAGES


@pytest.mark.django_db
@pytest.mark.parametrize("url_name", sorted(PAGES))
def test_each_role_gets_what_the_matrix_says_on_pages(url_name: str, client_for: ClientFactory) -> None:
    url = reverse(url_name)
    got = []
    for role in ROLES:
        response = client_for(None if role == "anonymous" else role).get(url)
        got.append(outcome(response.status_code, response.get("Location", "")))
    assert got == PAGES[url_name]


def admin_urls(host: Host) -> list[str]:
    device, pg = make_device(host), make_pg_install(host)
    urls = [reverse("admin:index"), reverse("admin:app_list", args=["runs"])]
    for model, obj in (("host", host), ("device", device), ("pginstall", pg)):
        urls += [
            reverse(f"admin:runs_{model}_changelist"),
            reverse(f"admin:runs_{model}_add"),
            reverse(f"admin:runs_{model}_change", args=[obj.pk]),
            reverse(f"admin:runs_{model}_delete", args=[obj.pk]),
            reverse(f"admin:runs_{model}_history", args=[obj.pk]),
        ]
    return urls


@pytest.mark.django_db
def test_only_admins_reach_the_inventory_admin(client_for: ClientFactory) -> None:
    urls = admin_urls(make_host())
    for url in urls:
        got = []
        for role in ROLES:
            response = client_for(None if role == "anonymous" else role).get(url)
            got.append(outcome(response.status_code, response.get("Location", "")))
        assert got == ADMIN_EXPECTED, url


@pytest.mark.django_db
def test_a_viewer_cannot_change_the_inventory_by_posting(client_for: ClientFactory) -> None:
    host = make_host()
    response = client_for("vera").post(
        reverse("admin:runs_host_change", args=[host.pk]), {"name": "renamed", "transport": "local"}
    )

    assert response.status_code == 302
    host.refresh_from_db()
    assert host.name == "lab1"


@pytest.mark.django_db
def test_an_operator_may_queue_and_cancel_runs_but_a_viewer_may_not(client_for: ClientFactory) -> None:
    users = client_for.users
    assert users["otto"].has_perms(["runs.queue_run", "runs.cancel_run"])
    assert users["ada"].has_perms(["runs.queue_run", "runs.cancel_run", "runs.change_device"])
    assert not users["vera"].has_perm("runs.queue_run")
    assert not users["otto"].has_perm("runs.change_host")
