"""Small breaks (issue 13, item 9): the favicon; the 404 and 500 pages, styled and with the
navigation (DEBUG off, as in every test); /health.json for monitors without an account, with
nothing secret in it; the host form's "Host keys" help text shown as written; the host's admin
page fitting a 1400 px window; the inventory saying whether a host is busy, and with which run.

With Django's test client, and in a real browser (Debian's chromium under Playwright, against
uvicorn, no lab needed). Screenshots go to test-artifacts/."""

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.urls import path, reverse
from django.views.defaults import server_error
from playwright.sync_api import BrowserContext, Page, Response

from benchlab.urls import urlpatterns as benchlab_urlpatterns
from runs.common.services import health
from runs.models import Host, RunState
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in, serving
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.web.test_accessibility import axe_context, axe_report, serious
from runs.tests.web_server import free_port

NAVIGATION = ['href="/"', 'href="/runs/"', 'href="/campaigns/"', 'href="/health/"']


@pytest.fixture(autouse=True)
def fresh_public_health() -> Iterator[None]:
    """Each test computes its own public health answer (it is reused for 10 s)."""
    health.public_health_report_forget()
    yield
    health.public_health_report_forget()


# ---- the favicon ----


@pytest.mark.django_db
def test_pages_and_the_admin_link_benchlabs_own_favicon(client_for: ClientFactory) -> None:
    page = client_for("vera").get(reverse("home")).content.decode()
    admin = client_for("ada").get(reverse("admin:runs_host_changelist")).content.decode()
    login = client_for(None).get(reverse("login")).content.decode()

    icon = '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
    assert icon in page and icon in admin and icon in login
    found = finders.find("favicon.svg")
    assert found and open(found).read().startswith("<svg")


# ---- 404 and 500 ----


@pytest.mark.django_db
def test_a_missing_page_is_the_styled_404_with_the_navigation(client_for: ClientFactory) -> None:
    assert settings.DEBUG is False  # Django shows its own debug page otherwise
    missing_run = client_for("vera").get("/runs/999999/")
    unknown = client_for(None).get("/no/such/page/")

    assert missing_run.status_code == unknown.status_code == 404
    page = missing_run.content.decode()
    assert "<title>Not found · benchlab</title>" in page and "/static/css/benchlab.css" in page
    assert all(link in page for link in NAVIGATION) and "Log out" in page
    # Without a session: the way to log in, nothing of the lab.
    logged_out = unknown.content.decode()
    assert 'href="/accounts/login/"' in logged_out and 'href="/runs/"' not in logged_out


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", login_not_required(boom)), *benchlab_urlpatterns]


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_is_the_styled_500_page_with_the_navigation() -> None:
    response = Client(raise_request_exception=False).get("/boom/")

    assert response.status_code == 500
    page = response.content.decode()
    assert "<title>Server error · benchlab</title>" in page and "/static/css/benchlab.css" in page
    assert all(link in page for link in NAVIGATION) and 'href="/health.json"' in page
    assert "a bug" not in page  # the error stays in the log


def test_the_500_page_needs_no_database_no_request_and_no_user() -> None:
    # No django_db mark: any query raises. Django renders 500.html with an empty context.
    response = server_error(RequestFactory().get("/runs/"))

    page = response.content.decode()
    assert response.status_code == 500 and "Something went wrong on benchlab" in page
    assert all(link in page for link in NAVIGATION) and "Log out" not in page


# ---- /health.json for monitors ----


def public_component_keys(body: dict[str, Any]) -> set[str]:
    return {key for component in body["components"] for key in component}


@pytest.mark.django_db
def test_health_json_answers_a_monitor_without_an_account_with_nothing_secret(client_for: ClientFactory) -> None:
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        answer = client_for(None).get("/health.json")
        details = client_for("vera").get("/health.json")
        no_role = client_for("nora").get("/health.json")

    assert answer.status_code == 503 and answer["Cache-Control"].startswith("max-age=0")
    body = answer.json()
    assert body["ok"] is False and {c["name"]: c["ok"] for c in body["components"]}["redis"] is False
    assert public_component_keys(body) == {"name", "ok", "elapsed_ms"}
    text = answer.content.decode()
    assert "PostgreSQL" not in text and "127.0.0.1" not in text and "Error" not in text
    # A viewer gets the reasons; an account without a role only what a monitor gets.
    assert details.status_code == 503 and "ConnectionError" in details.content.decode()
    assert public_component_keys(no_role.json()) == {"name", "ok", "elapsed_ms"}


@pytest.mark.django_db
def test_health_json_checks_at_most_every_ten_seconds_for_anonymous_callers(
    client_for: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[float] = []
    real = health.health_report

    def counted() -> health.HealthReport:
        checks.append(1.0)
        return real(["database"])

    monkeypatch.setattr(health, "health_report", counted)
    anonymous = client_for(None)
    answers = [anonymous.get("/health.json") for _ in range(5)]

    assert len(checks) == 1 and {answer.status_code for answer in answers} == {200}
    assert health.public_health_report(max_age_s=0) is not None and len(checks) == 2  # an old answer is redone


# ---- the host form and the inventory ----


@pytest.mark.django_db
def test_the_host_keys_help_text_shows_type_and_base64_as_written(client_for: ClientFactory) -> None:
    page = client_for("ada").get(reverse("admin:runs_host_add")).content.decode()

    assert "one per line as <code>&lt;type&gt; &lt;base64&gt;</code>" in page
    assert "<type>" not in page and "<base64>" not in page


@pytest.mark.django_db
def test_the_inventory_says_which_run_a_host_is_busy_with(client_for: ClientFactory) -> None:
    lab1, lab2 = make_host(name="lab1"), make_host(name="lab2", address="10.200.0.12")
    lab3, lab4 = make_host(name="lab3", address="10.200.0.13"), make_host(name="lab4", address="10.200.0.14")
    make_host(name="lab5", address="10.200.0.15", enabled=False)
    device, pg = make_device(lab1), make_pg_install(lab1)
    served = make_run(lab1, device, pg, state=RunState.MEASURING, client_host=lab2)
    lost = make_run(lab1, device, pg, state=RunState.FAILED)
    Host.objects.filter(pk__in=[lab1.pk, lab2.pk]).update(claimed_by=served)
    Host.objects.filter(pk=lab3.pk).update(cleanup_pending_for=lost)

    page = client_for("vera").get(reverse("home")).content.decode()

    def state_of(host: Host) -> str:
        match = re.search(rf'id="host-{host.pk}-state">(.*?)</p>', page, re.S)
        assert match, host.name
        return " ".join(re.sub(r"<[^>]+>", " ", match[1]).split())

    assert state_of(lab1) == f"busy with run {served.pk} (measuring)"
    assert state_of(lab2) == f"busy with run {served.pk} (its pgbench client, measuring)"
    assert state_of(lab3) == (
        f"cleanup pending after run {lost.pk} (host unreachable): "
        "it takes no run until it answers and has been cleaned up"
    )
    assert state_of(lab4) == "free"
    assert 'class="badge badge-off">disabled</span>: takes no new runs' in page
    assert f'href="/runs/{served.pk}/"' in page and f'href="/runs/{lost.pk}/"' in page


# ---- in the browser ----


def collect_failures(page: Page, failures: list[str]) -> None:
    def on_response(response: Response) -> None:
        if response.status >= 400:
            failures.append(f"{response.status} {response.url}")

    page.on("response", on_response)


def another_context(context: BrowserContext, **options: Any) -> BrowserContext:
    """A new context (its own cookies, window) of the same browser."""
    assert context.browser is not None
    return context.browser.new_context(**options)


BROWSER_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # uvicorn reads the rows


@BROWSER_DB
def test_the_small_breaks_in_the_browser() -> None:
    lab1 = make_host(name="lab1", host_keys="", cpu_cores=16, memory_bytes=64 * 2**30, hostname="lab1.example.net",
                     probed_at=datetime(2026, 11, 24, 6, 41, 32, tzinfo=UTC))  # fmt: skip
    for number in (2, 3):  # the host list as a lab has it: a few probed hosts
        make_host(name=f"lab{number}", address=f"10.200.0.1{number}", cpu_cores=8, memory_bytes=32 * 2**30,
                  probed_at=datetime(2026, 11, 24, 6, 41, 32, tzinfo=UTC))  # fmt: skip
    ssd = make_device(
        lab1,
        name="ssd0",
        path="/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R123456X",
        model="Samsung SSD 980 PRO 1TB",
        serial="S5GXNF0R123456X",
        capacity_bytes=1_000_204_886_016,
    )
    make_device(lab1, name="hdd0", kind="hdd", path="/dev/disk/by-id/ata-ST31500341AS_9VS1ABCD",
                model="ST31500341AS", serial="9VS1ABCD", capacity_bytes=1_500_301_910_016)  # fmt: skip
    pg = make_pg_install(lab1, label="PG 15, 8 kB pages")
    busy = make_run(lab1, ssd, pg, state=RunState.MEASURING)
    Host.objects.filter(pk=lab1.pk).update(claimed_by=busy)
    make_user("ada", "admin", password=PASSWORD)
    make_user("vera", "viewer", password=PASSWORD)
    ARTIFACTS.mkdir(exist_ok=True)
    failures: list[str] = []
    with serving(f"benchlab-small-{uuid.uuid4().hex[:8]}") as server, chromium(height=900) as (context, violations):
        page = context.new_page()
        collect_failures(page, failures)
        log_in(page, server, "ada")
        icon_requests = []
        page.on("request", lambda request: icon_requests.append(request.url) if "icon" in request.url else None)
        page.goto(f"{server}/")
        page.screenshot(path=str(ARTIFACTS / "inventory-busy.png"))
        state = page.text_content(f"#host-{lab1.pk}-state") or ""
        # A long device path stays inside the host's box, and the installs table does not cover it.
        overlap = page.evaluate(
            "(() => { const [devices, installs] = document.querySelectorAll('.host .host-tables table');"
            " const box = document.querySelector('.host').getBoundingClientRect();"
            " const d = devices.getBoundingClientRect(), i = installs.getBoundingClientRect();"
            " return Math.max(d.right - box.right, d.bottom - i.top); })()"
        )
        # A raw output is text/plain, linking no icon: the browser asks for /favicon.ico, which answers
        # (a 404 would be in `failures`).
        html_icons = list(icon_requests)
        icon = page.goto(f"{server}/favicon.ico")
        assert icon is not None
        icon_status = (icon.url.removeprefix(server), icon.status, icon.request.redirected_from is not None)
        page.goto(f"{server}/runs/{busy.pk}/outputs/pgbench.stdout.txt")
        page.wait_for_timeout(500)
        page.goto(f"{server}/runs/999999/")
        page.screenshot(path=str(ARTIFACTS / "not-found.png"))
        not_found = page.text_content("main") or ""
        nav_links = page.locator("nav[aria-label=main] a").count()

        # The host's admin page at 1400 px: nothing sticks out, the help text reads as written.
        wide = another_context(context, viewport={"width": 1400, "height": 900}, storage_state=context.storage_state())
        admin = wide.new_page()
        collect_failures(admin, failures)
        widths = {}
        for name in ("runs/host/add", "runs/host", "runs/device", f"runs/device/{ssd.pk}/change"):
            admin.goto(f"{server}/admin/{name}/")
            widths[name] = admin.evaluate("document.documentElement.scrollWidth")
        # The host list's table shows every column, with no scrolling inside its box either.
        admin.goto(f"{server}/admin/runs/host/")
        host_list = admin.evaluate(
            "(() => { const r = document.querySelector('#changelist-form .results');"
            " return {scroll: r.scrollWidth, client: r.clientWidth}; })()"
        )
        host_state = admin.inner_text("#result_list tr:has(a:text-is('lab1')) td.field-availability")
        admin.screenshot(path=str(ARTIFACTS / "admin-host-list-1400.png"))
        admin.goto(f"{server}/admin/runs/host/{lab1.pk}/change/")
        widths["host change"] = admin.evaluate("document.documentElement.scrollWidth")
        admin.screenshot(path=str(ARTIFACTS / "admin-host-1400.png"), full_page=True)
        help_text = admin.inner_text(".field-host_keys .help")
        # Each device's path and model show whole in their inputs (a by-id path is long).
        cut_off = admin.evaluate(
            '[...document.querySelectorAll(\'#devices-group input[name$="-path"], #devices-group'
            ' input[name$="-model"]\')].filter((e) => e.value && e.scrollWidth > e.clientWidth).map((e) => e.value)'
        )
        # A device row added in the page is laid out like the others: its path the table's width.
        admin.click("#devices-group .add-row a")
        added_path = admin.evaluate(
            "(() => { const rows = document.querySelectorAll('#devices-group tr.dynamic-devices');"
            " const path = rows[rows.length - 1].querySelector('input[name$=\"-path\"]');"
            " return {width: path.clientWidth, table: document.querySelector('#devices-group table').clientWidth}; })()"
        )
        admin.locator("#devices-group").screenshot(path=str(ARTIFACTS / "admin-host-1400-devices.png"))
        capacity = admin.evaluate(
            "(() => { const e = document.querySelector('#id_devices-0-capacity_bytes');"
            " return e.scrollWidth <= e.clientWidth; })()"
        )
        wide.close()

        # A viewer at the queue form: the styled 403, saying her role.
        viewer = another_context(context)
        refused = viewer.new_page()
        log_in(refused, server, "vera")
        forbidden = refused.goto(f"{server}/runs/new/")
        forbidden_page = (forbidden.status if forbidden else 0, refused.text_content("h1") or "",
                          refused.evaluate("getComputedStyle(document.querySelector('.topbar')).backgroundColor"),
                          refused.text_content("#your-role") or "")  # fmt: skip
        refused.screenshot(path=str(ARTIFACTS / "forbidden.png"))
        viewer.close()

        # What a monitor sees, without an account.
        monitor = another_context(context)
        public = monitor.request.get(f"{server}/health.json")
        public_status, public_body = public.status, public.json()
        favicon = monitor.new_page()
        favicon.set_viewport_size({"width": 64, "height": 64})
        favicon.goto(f"{server}/static/favicon.svg")
        favicon.screenshot(path=str(ARTIFACTS / "favicon.png"))
        monitor.close()

    assert "busy with run" in state and str(busy.pk) in state
    assert overlap <= 0, f"the devices table runs {overlap} px out of its box or under the installs table"
    assert "Not found" in not_found and nav_links >= 5
    assert forbidden_page[:3] == (403, "Not allowed HTTP 403", "rgb(21, 32, 46)"), forbidden_page
    assert "has the viewer role" in forbidden_page[3], forbidden_page
    assert [f for f in failures if "/runs/999999/" not in f] == [], failures
    assert any(url.endswith("/static/favicon.svg") for url in html_icons) and not any(
        url.endswith("/favicon.ico") for url in html_icons
    ), html_icons
    assert icon_status == ("/static/favicon.svg", 200, True), icon_status  # /favicon.ico: redirected to the icon
    assert all(width <= 1400 for width in widths.values()), widths
    assert "one per line as <type> <base64>" in help_text, help_text
    assert capacity, "the device's capacity in bytes does not show whole"
    assert host_list["scroll"] <= host_list["client"], f"the host list scrolls sideways inside its box: {host_list}"
    assert cut_off == [], f"cut off in the host's device rows: {cut_off}"
    assert added_path["width"] >= 0.9 * added_path["table"], added_path
    print("host list state column:", host_state)
    assert public_status in (200, 503) and set(public_body) == {"ok", "components"}
    assert not violations, violations


@BROWSER_DB
def test_the_500_page_when_the_database_is_down() -> None:
    """A web server whose database does not answer: logging in fails with the styled 500 page,
    which needs neither the database nor a user, within the Content-Security-Policy."""
    ARTIFACTS.mkdir(exist_ok=True)
    down = f"postgres://benchlab:nothing@127.0.0.1:{free_port()}/benchlab_down"
    with (
        serving(f"benchlab-small-{uuid.uuid4().hex[:8]}", DATABASE_URL=down) as server,
        chromium(height=700) as (context, violations),
    ):
        page = context.new_page()
        page.goto(f"{server}/accounts/login/")
        page.fill("#id_username", "ada")
        page.fill("#id_password", PASSWORD)
        with page.expect_response(lambda response: response.request.method == "POST") as posted:
            page.click("button[type=submit]")
        status = posted.value.status
        page.wait_for_load_state()
        page.screenshot(path=str(ARTIFACTS / "server-error.png"), full_page=True)
        heading = page.text_content("h1") or ""
        links = page.locator("nav[aria-label=main] a").all_text_contents()
        styled = page.evaluate("getComputedStyle(document.querySelector('.topbar')).backgroundColor")
        checker = axe_context(context)
        checked = checker.new_page()
        checked.goto(f"{server}/accounts/login/")
        checked.fill("#id_username", "ada")
        checked.fill("#id_password", PASSWORD)
        checked.click("button[type=submit]")
        checked.wait_for_load_state()
        report = axe_report(checked, "server-error")
        checker.close()

    assert status == 500 and "Something went wrong" in heading
    assert links == ["Inventory", "Runs", "Campaigns", "Health"]
    assert styled == "rgb(21, 32, 46)"  # benchlab.css came: the page is styled, not Django's bare text
    assert not serious(report), serious(report)
    assert not violations, violations


def test_the_public_health_answer_is_json_a_monitor_can_parse() -> None:
    report = health.HealthReport([health.ComponentHealth("redis", False, "ConnectionError: 127.0.0.1:6379", 2.0)])

    public = json.loads(json.dumps(report.as_public_dict()))

    assert public == {"ok": False, "components": [{"name": "redis", "ok": False, "elapsed_ms": 2.0}]}
