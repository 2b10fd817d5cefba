"""The run page and the inventory page read their units with the units filters (item 5, issue 13):
binary sizes, settings as SHOW prints them, which buffers were written. No lab: a run as a worker
leaves it, made in the database."""

import pytest

from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_the_run_page_and_the_inventory_read_in_binary_units_and_settings_with_theirs(web_server: str) -> None:
    host = make_host(name="lab1", memory_bytes=24 * 2**30, cpu_cores=8, cpu_model="TEST CPU", kernel="6.1",
                     distribution="Debian 12", probed_at="2025-03-10T14:05:09Z")  # fmt: skip
    device = make_device(host, capacity_bytes=3 * 2**29)
    environment = {
        "host": {"hostname": "lab1", "cpu_model": "TEST CPU", "cpu_cores": 8, "memory_bytes": 24 * 2**30,
                 "distribution": "Debian 12", "kernel": "6.1"},
        "device": {"path": device.path, "kind": "ssd", "model": "TEST SSD"},
        "filesystem": {"type": "ext4", "mount_options": "rw,noatime"},
        "postgresql": {"version": "PostgreSQL 15.19", "block_size": 8192, "wal_block_size": 8192,
                       "non_default_settings": {"shared_buffers": "16384", "max_wal_size": "1024",
                                                "checkpoint_timeout": "300", "max_connections": "100"}},
        "pgbench": {"version": "pgbench (PostgreSQL) 15.19"},
    }  # fmt: skip
    metrics = {"checkpoints": 2, "buffers_written": 12345, "cache_hit_ratio": 0.99,
               "pg_stats": {"buffers_checkpoint": 10000, "buffers_clean": 2000, "buffers_backend": 345}}  # fmt: skip
    run = make_run(host, device, make_pg_install(host), environment=environment, metrics=metrics, tps=100.0,
                   steady_tps_mean=101.0)  # fmt: skip
    make_user("vera", "viewer", password=PASSWORD)
    with signed_in(web_server, "vera", f"/runs/{run.pk}/", height=1000) as (page, violations, _errors):
        settings = page.inner_text("#pg-settings")
        buffers = page.inner_text("#buffers-written")
        environment_text = page.inner_text("section.results") if page.query_selector("section.results") else ""
        page.locator("#pg-settings").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "run-page-units.png"), full_page=True)
        page.goto(f"{web_server}/")
        home = page.inner_text("main")
        page.screenshot(path=str(ARTIFACTS / "home-units.png"), full_page=True)

    assert "shared_buffers=128MB" in settings and "max_wal_size=1GB" in settings
    assert "checkpoint_timeout=5min" in settings and "max_connections=100" in settings
    assert buffers == "12,345 buffers (96.4 MiB): checkpointer 10,000 · background writer 2,000 · backends 345"
    assert "24 GiB" in environment_text and "block 8 kB, WAL block 8 kB" in environment_text
    assert "24 GiB RAM" in home and "1.5 GiB" in home and "GB" not in home.replace("GiB", "")
    assert not violations, violations
