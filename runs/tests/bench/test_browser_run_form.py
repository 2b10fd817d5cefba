"""The queue form: its lists narrowed to the chosen server host, the browser's limits equal to the
server's, the error summary, and a scale checked against the room on the run's storage (for the
page, the API and campaigns alike). The server's rules with Django's test client; the page in a
real browser (Debian's chromium under Playwright, against uvicorn). Screenshots go to
test-artifacts/."""

import json
import re
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from playwright.sync_api import Page

from runs.bench.spec_checks import Inventory
from runs.bench.specs import NUMBER_FIELDS, RunSpec
from runs.campaigns.matrix import Variable, expand
from runs.models import Device, Host, PgInstall, Run, WorkloadScript
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_user, run_form_fields
from runs.tests.web.test_api import api_client

MIB = 2**20
TOO_BIG = (
    "scale 5000 needs about 74.3 GiB (tables and indexes 73.2 GiB, WAL while loading 1 GiB, the empty cluster "
    "40 MiB); lab2:ram has 768 MiB, about 667 MiB of it free once formatted with ext4: choose scale 20 or less, "
    "or a larger device."
)


def lab2() -> Host:
    """A server with one 768 MiB RAM disk (the virtual lab's) and two installs."""
    host = make_host(name="lab2", address="10.200.0.12", memory_bytes=1024 * MIB)
    make_device(host, name="ram", kind=Device.Kind.RAM, path="/dev/disk/by-id/lab2-ram",
                capacity_bytes=768 * MIB, wipe_allowed=True)  # fmt: skip
    make_pg_install(host, version="15.19")
    make_pg_install(host, bin_dir="/usr/lib/postgresql/16/bin", version="16.4")
    return host


def operator() -> Client:
    client = Client()
    client.force_login(make_user("otto", "operator"))
    return client


def ram_form(host: Host, **changes: object) -> dict[str, object]:
    return run_form_fields(host, host.devices.get(name="ram"), host.pg_installs.get(version="15.19")) | changes


class NumberInputs(HTMLParser):
    """Every <input type=number> of a page: name -> its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "input" and attributes.get("type") == "number":
            self.found[str(attributes["name"])] = attributes


def model_limits(name: str) -> tuple[float | None, float | None]:
    """The Run model's own range for a field, read from its validators here (not from runs.bench.specs)."""
    field = Run._meta.get_field(name)
    assert isinstance(field, models.Field)
    validators = field.validators
    lows = [v.limit_value for v in validators if isinstance(v, MinValueValidator)]
    highs = [v.limit_value for v in validators if isinstance(v, MaxValueValidator)]
    return max(lows, default=None), min(highs, default=None)


def outside(limit: float, below: bool) -> float:
    """The nearest value past a limit: a whole number for whole limits, else a tenth of it away."""
    step = 1 if float(limit).is_integer() else limit / 10
    return limit - step if below else limit + step


# Changes that keep the other fields valid at a limit (pgbench refuses more threads than clients).
SYSBENCH_RUN: dict[str, object] = {
    "driver": "sysbench",
    "workload": "oltp_read_only",
    "query_mode": "simple",
}  # whose fields they are
COMPANIONS: dict[str, dict[str, object]] = {
    "threads": {"clients": 10_000},
    "clients": {"threads": 1},
    "sysbench_tables": SYSBENCH_RUN,
    "sysbench_table_size": SYSBENCH_RUN,
    "warmup_run_clients": {"warmup_run_s": 5},  # its clients only with a warm-up run
}


@pytest.mark.django_db
def test_the_browsers_limits_are_the_servers_for_every_number_field() -> None:
    host = make_host()
    device, pg = make_device(host, wipe_allowed=True), make_pg_install(host)
    otto = operator()
    parser = NumberInputs()
    parser.feed(otto.get(reverse("run-new")).content.decode())

    # The workload library's parameters: each input has its declared range (the server's, as
    # runs/tests/bench/test_workload_library.py shows), and is no field of the run.
    library = {name: attributes for name, attributes in parser.found.items() if name.startswith("param-")}
    declared = {
        f"param-{s.pk}-{p.name}": (p.minimum, p.maximum) for s in WorkloadScript.objects.all() for p in s.declared
    }
    assert {name: (float(str(a["min"])), float(str(a["max"]))) for name, a in library.items()} == declared
    numbers = {name: attributes for name, attributes in parser.found.items() if name not in library}
    assert set(numbers) == set(NUMBER_FIELDS)
    for name, attributes in numbers.items():
        low, high = model_limits(name)
        shown = tuple(None if attributes.get(key) is None else float(str(attributes[key])) for key in ("min", "max"))
        assert shown == (low, high), f"{name}: the page allows {shown}, the model {(low, high)}"
        assert low is not None, f"{name} has no lower limit"
        # The server takes each limit and refuses the value just past it, naming the range.
        for limit, below in ((low, True), (high, False)):
            if limit is None:
                continue
            changes = COMPANIONS.get(name, {})
            taken = otto.post(reverse("run-new"), run_form_fields(host, device, pg, **changes, **{name: limit}))
            refused = otto.post(reverse("run-new"), run_form_fields(host, device, pg, **changes,
                                                                     **{name: outside(limit, below)}))  # fmt: skip
            assert taken.status_code == 302, (name, limit, taken.context and taken.context["form"].errors)
            errors = refused.context["form"].errors.get(name, [])
            assert refused.status_code == 400 and len(errors) == 1, (name, limit, errors)
            # The limit as the message writes it: whole below 1e15 (1000000000), else 1e+15.
            assert " must be " in errors[0] and (f"{limit:g}" in errors[0] or f"{limit:.0f}" in errors[0]), errors


@pytest.mark.django_db
def test_a_warm_up_is_bounded_like_the_duration_with_the_same_words() -> None:
    host = make_host()
    form = run_form_fields(host, make_device(host, wipe_allowed=True), make_pg_install(host))
    otto = operator()

    warm_up = otto.post(reverse("run-new"), form | {"warmup_s": 10**12}).context["form"].errors["warmup_s"]
    duration = otto.post(reverse("run-new"), form | {"duration_s": 10**12}).context["form"].errors["duration_s"]
    negative = otto.post(reverse("run-new"), form | {"warmup_s": -1}).context["form"].errors["warmup_s"]

    assert warm_up == ["warm-up (s) must be between 0 and 604800 (7 days); got 1000000000000."]
    assert duration == ["duration (s) must be between 1 and 604800 (7 days); got 1000000000000."]
    assert negative == ["warm-up (s) must be between 0 and 604800 (7 days); got -1."]


@pytest.mark.django_db
def test_a_scale_too_big_for_the_device_is_refused_by_the_page_the_api_and_campaigns() -> None:
    host = lab2()
    otto = operator()

    page = otto.post(reverse("run-new"), ram_form(host, scale=5000))
    fits = otto.post(reverse("run-new"), ram_form(host, scale=20))
    body = {name: value for name, value in ram_form(host, scale=5000).items() if value != ""}  # JSON has no blanks
    api = api_client(make_user("ada", "operator")).post("/api/runs/", body, format="json")
    base = RunSpec(server_host_id=host.pk, device_id=host.devices.get(name="ram").pk, filesystem="ext4",
                   pg_install_id=host.pg_installs.get(version="15.19").pk, scale=1)  # fmt: skip
    cells = expand(base, [Variable("scale", (20, 5000))], Inventory.load())

    assert page.status_code == 400 and page.context["form"].errors["scale"] == [TOO_BIG]
    assert fits.status_code == 302
    assert api.status_code == 400 and api.json()["scale"] == [TOO_BIG], api.json()
    assert [cell.errors for cell in cells] == [{}, {"scale": [TOO_BIG]}]
    assert Run.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # A tmpfs holds half the RAM unless size= says otherwise (1 GiB of RAM here).
        ({"filesystem": "tmpfs", "mount_options": "", "scale": 20},
         "scale 20 needs about 640 MiB (tables and indexes 300 MiB, WAL while loading 300 MiB, the empty cluster "
         "40 MiB); a tmpfs on lab2 holds 512 MiB (50 % of the host's RAM, tmpfs's default; size= sets it): "
         "choose scale 15 or less, or a larger device."),
        ({"filesystem": "tmpfs", "mount_options": "size=2g", "scale": 20}, None),
        # A smaller max_wal_size keeps less WAL while loading: scale 35 then fits on 768 MiB.
        ({"scale": 35}, "scale 35 needs about 1.06 GiB"),
        ({"scale": 35, "pg_settings": "max_wal_size = 64MB"}, None),
        # A directory is not formatted: all of its size counts.
        ({"scale": 24, "filesystem": "directory", "mount_options": "", "device": "dir"}, None),
        ({"scale": 25, "filesystem": "directory", "mount_options": "", "device": "dir"},
         "scale 25 needs about 790 MiB (tables and indexes 375 MiB, WAL while loading 375 MiB, the empty cluster "
         "40 MiB); lab2:dir has 768 MiB: choose scale 24 or less, or a larger device."),
    ],
    ids=["tmpfs-default", "tmpfs-size", "default-wal", "small-wal", "directory-fits", "directory-full"],
)  # fmt: skip
def test_the_room_needed_follows_the_filesystem_and_max_wal_size(changes: dict, expected: str | None) -> None:
    host = lab2()
    if changes.get("device") == "dir":
        directory = make_device(host, name="dir", path="/srv/bench", capacity_bytes=768 * MIB)
        changes = changes | {"device": directory.pk}

    response = operator().post(reverse("run-new"), ram_form(host, **changes))

    errors = response.context["form"].errors if response.status_code == 400 else {}
    if expected is None:
        assert response.status_code == 302, errors
    else:
        assert errors.get("scale", [""])[0].startswith(expected), errors


@pytest.mark.django_db
def test_a_device_of_unknown_size_is_not_checked() -> None:
    host = make_host()
    device = make_device(host, wipe_allowed=True, capacity_bytes=None)

    response = operator().post(reverse("run-new"), run_form_fields(host, device, make_pg_install(host), scale=5000))

    assert response.status_code == 302


@pytest.mark.django_db
def test_the_options_say_whose_they_are_and_what_a_client_would_run() -> None:
    server = lab2()
    client = make_host(name="lab3", address="10.200.0.13", serves_postgres=False)
    make_pg_install(client, version="15.20")
    make_pg_install(client, bin_dir="/usr/lib/postgresql/17/bin", version="17.2")
    old, new = server.pg_installs.get(version="15.19"), server.pg_installs.get(version="16.4")

    page = operator().get(reverse("run-new")).content.decode()

    ram = server.devices.get()
    assert (
        f'<option value="{ram.pk}" data-host="{server.pk}" data-facts="RAM · 768 MiB · block device, may be formatted">'
        in page
    )
    assert f'<option value="{old.pk}" data-host="{server.pk}">' in page
    pgbench = json.dumps({str(old.pk): "pgbench of PostgreSQL 15.20 (8 kB pages) on lab3",
                          str(new.pk): "pgbench of PostgreSQL 17.2 (8 kB pages) on lab3"})  # fmt: skip
    (box,) = re.findall(rf'<input type="checkbox" name="client_hosts" value="{client.pk}"[^>]*>', page)
    assert f'data-pgbench="{escape(pgbench)}"' in box


# ---- in the browser ------------------------------------------------------------------------------


def visible_options(page: Page, select: str) -> list[str]:
    script = f"[...document.querySelectorAll('{select} option')].filter((o) => !o.hidden && o.value)"
    return list(page.evaluate(f"{script}.map((o) => o.textContent.trim())"))


def note(page: Page, selector: str) -> str:
    return " ".join((page.text_content(selector) or "").split())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_form_narrows_its_lists_checks_ranges_and_sums_up_what_the_server_refused(page_server: str) -> None:
    lab1 = make_host(name="lab1")
    make_device(lab1, name="ssd0", capacity_bytes=2**31, wipe_allowed=True)
    make_device(lab1, name="hdd0", kind=Device.Kind.HDD, path="/dev/disk/by-id/ata-TEST_HDD_1")
    make_pg_install(lab1)
    server = lab2()
    lab3 = make_host(name="lab3", address="10.200.0.13", serves_postgres=False)
    make_pg_install(lab3, version="15.20")
    server_name, installs = server.name, [str(pg) for pg in PgInstall.objects.filter(host=server)]
    lab3_box, server_box = f"#client-hosts-field input[value='{lab3.pk}']", f"input[value='{server.pk}']"
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=1500) as (page, violations, _errors):
        before = (visible_options(page, "#id_device"), note(page, "#device-note"))

        page.select_option("#id_server_host", label=server_name)
        narrowed = (visible_options(page, "#id_device"), visible_options(page, "#id_pg_install"))
        only_device = (page.locator("#id_device option:checked").text_content(), note(page, "#device-note"))
        page.select_option("#id_pg_install", label=installs[0])
        page.check(lab3_box)
        client_note = note(page, f"#client-note-{lab3.pk}")
        server_as_client = page.is_disabled(f"#client-hosts-field {server_box}")
        one_client_shares_nothing = page.is_disabled("#id_shared_database")
        page.screenshot(path=str(ARTIFACTS / "run-form-narrowed.png"), full_page=True)

        # The browser refuses what the server would, with the server's limits.
        page.fill("#id_clients", "0")
        clients_limits = (page.get_attribute("#id_clients", "min"), page.get_attribute("#id_clients", "max"))
        under = page.evaluate("document.getElementById('id_clients').validity.rangeUnderflow")
        page.fill("#id_warmup_s", "604801")
        over = page.evaluate("document.getElementById('id_warmup_s').validity.rangeOverflow")
        page.click("form.run-form button[type=submit]")
        still_here = page.url.endswith("/runs/new/") and page.evaluate("!document.getElementById('error-summary')")

        # What only the server can tell: the scale does not fit on the device.
        page.fill("#id_clients", "4")
        page.fill("#id_warmup_s", "5")
        page.fill("#id_scale", "5000")
        page.fill("#id_threads", "8")
        page.click("form.run-form button[type=submit]")
        page.wait_for_selector("#error-summary")
        summary = note(page, "#error-summary")
        summary_focused = page.evaluate("document.activeElement.id")
        after_refusal = (page.locator("#id_device option:checked").text_content(), visible_options(page, "#id_device"))
        page.screenshot(path=str(ARTIFACTS / "run-form-refused.png"), full_page=False)
        page.click("#error-summary a[href='#id_scale']")
        scale_focused = page.evaluate("document.activeElement.id")

        # Another server host: the device of the first is dropped, the lists follow.
        page.select_option("#id_server_host", label="lab1")
        other = (
            visible_options(page, "#id_device"),
            page.input_value("#id_device"),
            note(page, f"#client-note-{lab3.pk}"),
        )

    assert before[0] == ["lab1:hdd0", "lab1:ssd0", "lab2:ram"] and before[1].startswith("Choose a server host first")
    assert narrowed == (["lab2:ram"], installs)
    assert only_device == ("lab2:ram", "RAM · 768 MiB · block device, may be formatted")
    assert client_note == "client 1: runs the pgbench of PostgreSQL 15.20 (8 kB pages) on lab3 over TCP"
    assert server_as_client and one_client_shares_nothing
    assert clients_limits == ("1", "10000") and under and over and still_here
    assert summary.startswith("The run was not queued.")
    assert f"Scale: {TOO_BIG}" in summary, summary
    assert "Threads: threads cannot exceed clients" in summary, summary
    assert summary_focused == "error-summary" and scale_focused == "id_scale"
    assert after_refusal == ("lab2:ram", ["lab2:ram"])
    assert other == (
        ["lab1:hdd0", "lab1:ssd0"],
        "",
        "client 1: runs the pgbench of PostgreSQL 15.20 (8 kB pages) on lab3 over TCP",
    )
    assert not Run.objects.exists()
    assert not violations, violations


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_client_hosts_are_numbered_share_a_database_on_request_and_come_back_after_a_refusal(
    page_server: str,
) -> None:
    server = lab2()
    clients = [make_host(name=name, address=f"10.200.0.{n}", serves_postgres=False) for name, n in
               (("lab3", 13), ("lab4", 14), ("lab5", 15))]  # fmt: skip
    for client in clients[:2]:
        make_pg_install(client, version="15.20")
    lab3, lab4, lab5 = (f"#client-hosts-field input[value='{client.pk}']" for client in clients)
    notes = [f"#client-note-{client.pk}" for client in clients]
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=1700) as (page, violations, _errors):
        page.select_option("#id_server_host", label=server.name)
        page.select_option("#id_pg_install", label="PostgreSQL 15.19 (8 kB pages) on lab2")
        page.check(lab4)
        page.check(lab3)
        page.check(lab5)
        numbered = [note(page, selector) for selector in notes]
        own = (page.is_disabled("#id_shared_database"), note(page, "#shared-note"))
        page.check("#id_shared_database")
        shared = note(page, "#shared-note")
        page.locator("#client-hosts-field").screenshot(path=str(ARTIFACTS / "run-form-client-hosts.png"))
        page.screenshot(path=str(ARTIFACTS / "run-form-two-clients.png"), full_page=True)
        page.fill("#id_scale", "5000")  # refused: nothing is queued, the page comes back as sent
        page.click("form.run-form button[type=submit]")
        page.wait_for_selector("#error-summary")
        summary = note(page, "#error-summary")
        kept = ([page.is_checked(box) for box in (lab3, lab4, lab5)], page.is_checked("#id_shared_database"))
        page.screenshot(path=str(ARTIFACTS / "run-form-two-clients-refused.png"), full_page=True)
        page.uncheck(lab3)
        page.uncheck(lab5)
        alone = (page.is_disabled("#id_shared_database"), page.is_checked("#id_shared_database"))
        alone_note = note(page, notes[1])

    assert numbered == [
        "client 1: runs the pgbench of PostgreSQL 15.20 (8 kB pages) on lab3 over TCP",
        "client 2: runs the pgbench of PostgreSQL 15.20 (8 kB pages) on lab4 over TCP",
        "client 3: lab5 has no PostgreSQL install, so no pgbench, in the inventory",
    ]  # in the list's order, whatever order they were ticked in
    assert own == (False, "Each runs against its own database: bench_1 … bench_3.")
    assert shared == "All of them run against one database, bench."
    assert "Client hosts: lab5 has no PostgreSQL install, so no pgbench, in the inventory." in summary, summary
    assert f"Scale: {TOO_BIG}" in summary, summary
    assert kept == ([True, True, True], True)
    assert alone == (True, False) and alone_note.startswith("client 1: ")
    assert not Run.objects.exists()
    assert not violations, violations


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_install_missing_from_its_host_is_marked_and_queueing_on_it_says_to_re_probe(page_server: str) -> None:
    server = lab2()
    gone = server.pg_installs.get(version="16.4")
    PgInstall.objects.filter(pk=gone.pk).update(missing_since=datetime(2026, 11, 26, 23, 40, tzinfo=UTC))
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=1200) as (page, violations, _errors):
        page.select_option("#id_server_host", label=server.name)
        offered = visible_options(page, "#id_pg_install")
        page.select_option("#id_pg_install", label=offered[-1])
        page.select_option("#id_filesystem", "ext4")
        page.click("form.run-form button[type=submit]")
        page.wait_for_selector("#error-summary")
        summary = note(page, "#error-summary")
        page.screenshot(path=str(ARTIFACTS / "run-form-install-missing.png"), full_page=False)
        page.goto(f"{page_server}/campaigns/new/")  # a campaign's swept installs say so too
        swept = page.locator(f"label:has(input[name='pg_install'][value='{gone.pk}'])").text_content()

    assert offered == [
        str(server.pg_installs.get(version="15.19")),
        f"{gone} (missing from lab2 since 2026-11-26 23:40 UTC)",
    ]
    assert (swept or "").strip() == f"lab2: {gone} (missing from lab2 since 2026-11-26 23:40 UTC)"
    assert (
        f"PostgreSQL install: {gone} ({gone.bin_dir}) is missing from lab2 since 2026-11-26 23:40 UTC: the probe "
        "found none of its programs there. Choose another install; once it is back, re-probe lab2 (admin: Hosts, "
        "select it, action “Probe now”; or `manage.py probe_host lab2`)." in summary
    ), summary
    assert not Run.objects.exists()
    assert not violations, violations


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_state_before_measuring_and_the_seed_are_set_on_the_form_and_run_again_keeps_them(
    page_server: str,
) -> None:
    host = lab2()
    install = str(host.pg_installs.get(version="15.19"))
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/runs/new/", height=1900) as (page, violations, _errors):
        page.select_option("#id_server_host", label=host.name)
        page.select_option("#id_pg_install", label=install)
        page.select_option("#id_cache_state", "cold")
        page.select_option("#id_data_state", "frozen")
        page.fill("#id_settle_s", "3")
        page.fill("#id_random_seed", "-1")
        page.fill("#id_scale", "5")
        page.locator("#state-before").screenshot(path=str(ARTIFACTS / "run-form-state-before.png"))
        seed_refused = page.evaluate("document.getElementById('id_random_seed').validity.rangeUnderflow")
        page.fill("#id_random_seed", "20261127")
        page.click("form.run-form button[type=submit]")
        page.wait_for_url(re.compile(r"/runs/\d+/$"))
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])
        page.goto(f"{page_server}/runs/new/?again={run_id}")
        again = [page.input_value(f"#id_{name}") for name in ("cache_state", "data_state", "settle_s", "random_seed")]
        checkpoint_again = page.is_checked("#id_checkpoint_before")
        page.locator("#state-before").screenshot(path=str(ARTIFACTS / "run-form-state-before-again.png"))

    run = Run.objects.get(pk=run_id)
    assert seed_refused
    assert (run.cache_state, run.data_state, run.settle_s, run.random_seed) == ("cold", "frozen", 3, 20261127)
    assert run.checkpoint_before and checkpoint_again
    assert again == ["cold", "frozen", "3", "20261127"]
    assert violations == []
