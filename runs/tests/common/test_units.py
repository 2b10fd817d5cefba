"""Units as a lab engineer reads them: binary sizes (GiB, never "GB" for GiB), PostgreSQL settings
as SHOW prints them, which buffers were written, and dates on a 24-hour clock with their time
zone, in benchlab's pages and in the admin; and the demo's named users."""

import re
import stat
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.template import Context, Template
from django.test import Client, override_settings
from django.urls import reverse

from runs.common.units import binary_size, buffers_written, pg_setting_text, pg_settings_shown
from runs.models import Device
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

GIB = 2**30
PROBED = datetime(2025, 3, 10, 14, 5, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (None, "–"),
        ("", "–"),
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (805306368, "768 MiB"),
        (3 * 2**29, "1.5 GiB"),
        (24 * GIB, "24 GiB"),
        (2**40 - 1, "1 TiB"),  # rounds up to the next unit, not "1024 GiB"
        (123456789012345, "112 TiB"),
        ("805306368", "768 MiB"),  # as a run's JSON may hold it
        ("unknown", "unknown"),  # shown as it is, never a server error
        (-2048, "-2 KiB"),
    ],
)
def test_binary_sizes_use_binary_units_with_three_digits_at_most(size: object, shown: str) -> None:
    assert binary_size(size) == shown


@pytest.mark.parametrize(
    ("name", "value", "block_size", "shown"),
    [
        ("shared_buffers", "16384", 8192, "128MB"),  # 16384 pages of 8 kB
        ("shared_buffers", "16384", 16384, "256MB"),  # of 16 kB: the install's page size counts
        ("shared_buffers", "131072", 8192, "1GB"),
        ("shared_buffers", "100", 8192, "800kB"),
        ("effective_cache_size", "524288", 8192, "4GB"),
        ("wal_buffers", "512", 8192, "16MB"),  # WAL pages of 32 kB: the WAL block size, not the page size
        ("work_mem", "4096", 8192, "4MB"),
        ("work_mem", "1000", 8192, "1000kB"),
        ("maintenance_work_mem", "65536", 8192, "64MB"),
        ("max_wal_size", "1024", 8192, "1GB"),
        ("min_wal_size", "80", 8192, "80MB"),
        ("checkpoint_timeout", "300", 8192, "5min"),
        ("checkpoint_timeout", "3600", 8192, "1h"),
        ("bgwriter_delay", "200", 8192, "200ms"),
        ("vacuum_cost_delay", "0.5", 8192, "500us"),
        ("log_min_duration_statement", "-1", 8192, "-1"),  # off, as SHOW prints it
        ("checkpoint_flush_after", "0", 8192, "0"),
        ("fsync", "off", 8192, "off"),
        ("max_connections", "100", 8192, "100"),  # no unit
        ("log_timezone", "Etc/UTC", 8192, "Etc/UTC"),  # not a setting benchlab tunes: as it is
    ],
)
def test_postgresql_settings_read_as_show_prints_them(name: str, value: str, block_size: int, shown: str) -> None:
    assert pg_setting_text(name, value, block_size, wal_block_size=32768 if name == "wal_buffers" else 8192) == shown


def test_a_runs_settings_are_shown_with_their_units_from_its_environment() -> None:
    postgresql = {
        "block_size": 16384,
        "wal_block_size": 8192,
        "non_default_settings": {"shared_buffers": "8192", "max_wal_size": "1024", "wal_buffers": "512"},
    }

    template = Template(
        "{% load units %}{% for name, value in postgresql|pg_settings_shown %}{{ name }}={{ value }} {% endfor %}"
    )

    assert (
        template.render(Context({"postgresql": postgresql})) == "shared_buffers=128MB max_wal_size=1GB wal_buffers=4MB "
    )
    assert pg_settings_shown(None) == [] and pg_settings_shown({}) == []
    assert pg_settings_shown({"non_default_settings": ["not", "a", "mapping"]}) == []


def test_buffers_written_says_which_buffers_and_how_much() -> None:
    metrics = {
        "buffers_written": 12345,
        "pg_stats": {"buffers_checkpoint": 10000, "buffers_clean": 2000, "buffers_backend": 345},
    }

    assert buffers_written(metrics, 8192) == (
        "12,345 buffers (96.4 MiB): checkpointer 10,000 · background writer 2,000 · backends 345"
    )
    assert buffers_written({"buffers_written": 1}) == "1 buffer"  # an older run without the split
    assert buffers_written({"buffers_written": None}) == "–" and buffers_written({}) == "–"


@pytest.mark.django_db
def test_the_admin_shows_ram_and_capacity_in_binary_units_and_times_on_a_24_hour_clock_with_the_zone(
    client_for: ClientFactory,
) -> None:
    host = make_host(name="lab1", memory_bytes=24 * GIB, probed_at=PROBED)
    device = make_device(host, capacity_bytes=805306368)
    ada = client_for("ada")

    hosts = ada.get(reverse("admin:runs_host_changelist")).content.decode()
    devices = ada.get(reverse("admin:runs_device_changelist")).content.decode()
    device_form = ada.get(reverse("admin:runs_device_change", args=[device.pk])).content.decode()
    host_form = ada.get(reverse("admin:runs_host_change", args=[host.pk])).content.decode()
    with override_settings(TIME_ZONE="America/New_York"):
        new_york = ada.get(reverse("admin:runs_host_changelist")).content.decode()

    assert '<td class="field-memory">24 GiB</td>' in hosts and "GB<" not in hosts
    assert '<td class="field-probed_at nowrap">2025-03-10 14:05:09 UTC</td>' in hosts
    assert '<td class="field-probed_at nowrap">2025-03-10 10:05:09 EDT</td>' in new_york
    assert '<td class="field-capacity">768 MiB</td>' in devices
    # The form: the bytes to edit, and beside them what they are.
    assert 'name="capacity_bytes" value="805306368"' in device_form
    assert re.search(r'<label class="inline">Capacity:</label>\s*<div class="readonly">768 MiB</div>', device_form)
    assert re.search(r'<td class="field-capacity">\s*<p>768 MiB</p>', host_form)  # the host's device inline


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_admin_reads_sizes_and_times_in_the_inventory(web_server: str) -> None:
    lab1 = make_host(name="lab1", memory_bytes=24 * GIB, probed_at=PROBED, cpu_cores=8)
    make_host(name="lab2", address="10.200.0.12", memory_bytes=768 * 2**20, probed_at=PROBED)
    ssd = make_device(lab1, capacity_bytes=3 * 2**29, model="TEST SSD")
    make_device(lab1, name="ram", kind=Device.Kind.RAM, path="/dev/ram0", capacity_bytes=768 * 2**20)
    make_user("ada", "admin", password=PASSWORD)
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium(height=800) as (context, violations):
        page = context.new_page()
        log_in(page, web_server, "ada")
        page.set_viewport_size({"width": 1800, "height": 800})  # the host list's every column in the picture
        page.goto(f"{web_server}/admin/runs/host/")
        host_rows = page.inner_text("#result_list")
        page.screenshot(path=str(ARTIFACTS / "admin-host-list-units.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(f"{web_server}/admin/runs/device/")
        device_rows = page.inner_text("#result_list")
        page.screenshot(path=str(ARTIFACTS / "admin-device-list-units.png"), full_page=True)
        page.goto(f"{web_server}/admin/runs/device/{ssd.pk}/change/")
        capacity = page.inner_text(".field-capacity_bytes")
        page.screenshot(path=str(ARTIFACTS / "admin-device-form-units.png"), full_page=True)

    assert "24 GiB" in host_rows and "768 MiB" in host_rows and "2025-03-10 14:05:09 UTC" in host_rows
    assert "1.5 GiB" in device_rows and "768 MiB" in device_rows and "GB" not in device_rows
    assert "Capacity (bytes)" in capacity and "Capacity:\n1.5 GiB" in capacity
    assert not re.search(r"\b[ap]\.m\.", host_rows), host_rows  # no 12-hour clock
    assert not violations, violations


def demo_users(tmp_path: Path) -> str:
    out = StringIO()
    with override_settings(VAR_DIR=tmp_path):
        call_command("ensure_demo_users", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_demo_has_named_users_one_per_role_their_passwords_in_a_root_only_file(tmp_path: Path) -> None:
    first = demo_users(tmp_path)
    again = demo_users(tmp_path)

    lines = (tmp_path / "demo_passwords").read_text().split("\n")
    noted = {user: (role, password) for user, role, password in (line.split() for line in lines if line)}
    assert {user: role for user, (role, _) in noted.items()} == {"olga": "operator", "oskar": "operator",
                                                                  "vera": "viewer"}  # fmt: skip
    for name, (role, password) in noted.items():
        user = User.objects.get(username=name)
        assert user.check_password(password) and user.groups.filter(name=role).exists() and not user.is_staff
        assert password not in first and password not in again
    assert stat.S_IMODE((tmp_path / "demo_passwords").stat().st_mode) == 0o600
    assert "Created demo users olga (operator), oskar (operator), vera (viewer)" in first
    assert "Created" not in again and "'vera' exists; its password is unchanged" in again


@pytest.mark.django_db
def test_demo_users_never_change_an_existing_user_and_the_file_notes_only_passwords_that_work(
    tmp_path: Path,
) -> None:
    vera = make_user("vera", "operator", password="veras-own-password")
    (tmp_path / "demo_passwords").write_text("vera viewer a-password-of-another-database\n")

    demo_users(tmp_path)

    vera.refresh_from_db()
    assert vera.check_password("veras-own-password") and vera.groups.get().name == "operator"
    text = (tmp_path / "demo_passwords").read_text()
    assert "vera" not in text and "olga operator" in text and "oskar operator" in text


@pytest.mark.django_db
def test_runs_queued_by_demo_users_show_their_names_in_the_list(tmp_path: Path) -> None:
    demo_users(tmp_path)
    olga = User.objects.get(username="olga")
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), queued_by=olga)
    client = Client()
    client.force_login(User.objects.get(username="vera"))

    page = client.get(reverse("runs")).content.decode()

    assert f'<tr id="run-{run.pk}">' in page and "<small>by olga</small>" in page
