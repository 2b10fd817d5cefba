import pytest
from django.urls import reverse
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install


@pytest.mark.django_db
def test_the_home_page_shows_hosts_with_their_devices_and_installs(client_for: ClientFactory) -> None:
    lab1 = make_host(cpu_model="AMD EPYC 7B13", cpu_cores=2, memory_bytes=24 * 2**30, probed_at=timezone.now())
    make_device(lab1, name="ssd0", capacity_bytes=2 * 2**30, wipe_allowed=True)
    make_device(lab1, name="hdd0", kind="hdd", path="/dev/disk/by-id/ata-ST31500341AS")
    make_pg_install(lab1, bin_dir="/opt/pg-4k/bin", block_size=4096, label="PG 15 4 kB")
    make_host(name="lab2", address="10.200.0.12", enabled=False)

    page = client_for("vera").get(reverse("home")).content.decode()

    for text in ["lab1", "lab2", "disabled", "ssd0", "hdd0", "/dev/disk/by-id/ata-ST31500341AS", "2 GiB",
                 "PG 15 4 kB", "4 kB", "AMD EPYC 7B13", "24 GiB"]:  # fmt: skip
        assert text in page, text


@pytest.mark.django_db
def test_the_home_page_works_without_javascript(client_for: ClientFactory) -> None:
    page = client_for("vera").get(reverse("home")).content.decode()

    assert "<script" not in page
    assert 'href="/health/"' in page
    assert 'action="/accounts/logout/"' in page  # logging out is a plain form POST


@pytest.mark.django_db
def test_the_admin_link_is_shown_only_to_admins(client_for: ClientFactory) -> None:
    assert 'href="/admin/"' in client_for("ada").get("/").content.decode()
    assert 'href="/admin/"' not in client_for("otto").get("/").content.decode()


@pytest.mark.django_db
def test_the_home_page_query_count_does_not_grow_with_the_inventory(
    client_for: ClientFactory, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    client = client_for("vera")
    for number in range(12):
        host = make_host(name=f"lab{number}")
        make_device(host)
        make_pg_install(host)

    # The session, the user and their permissions (4), the inventory (3), what waits for each host
    # (4), the recent runs (2), whom a viewer asks for a role (1); runs/tests/web/test_home_page.py
    # holds the bound with runs, campaigns and queued jobs.
    with django_assert_max_num_queries(14):
        client.get(reverse("home"))


@pytest.mark.django_db
def test_an_empty_inventory_points_admins_to_adding_a_host(client_for: ClientFactory) -> None:
    page = client_for("ada").get(reverse("home")).content.decode()

    assert "No lab hosts yet" in page
    assert reverse("admin:runs_host_add") in page
