"""The campaign form in a real browser: a base run with two client hosts sharing one database,
and client hosts swept one at a time, previewed (nothing queued). Screenshots go to
test-artifacts/."""

import pytest

from runs.models import Campaign, Run
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.factories import make_device, make_host, make_pg_install, make_user


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_base_run_with_two_client_hosts_and_client_hosts_swept_are_previewed(page_server: str) -> None:
    server = make_host(name="lab1")
    make_device(server, name="ssd0", capacity_bytes=2**31, wipe_allowed=True)
    make_pg_install(server)
    clients = [make_host(name=name, address=f"10.200.0.{n}", serves_postgres=False) for name, n in
               (("lab2", 12), ("lab3", 13))]  # fmt: skip
    for client in clients:
        make_pg_install(client, version="15.20")
    lab2, lab3 = (client.pk for client in clients)
    make_user("otto", "operator", password=PASSWORD)
    with signed_in(page_server, "otto", "/campaigns/new/", height=2400) as (page, violations, _errors):
        page.fill("#id_name", "two clients")
        page.select_option("#id_base-server_host", label="lab1")
        page.select_option("#id_base-device", label="lab1:ssd0")
        page.select_option("#id_base-pg_install", index=1)
        page.fill("#id_base-scale", "2")
        page.check(f"input[name='base-client_hosts'][value='{lab2}']")
        page.check(f"input[name='base-client_hosts'][value='{lab3}']")
        page.check("#id_base-shared_database")
        page.check("input[name='client_host'][value='']")  # swept: the server itself, then lab3 alone
        page.check(f"input[name='client_host'][value='{lab3}']")
        page.click("#preview")
        page.wait_for_selector("#queue")
        matrix = [
            " ".join((row.text_content() or "").split()) for row in page.locator("tr.cell-ok, tr.cell-rejected").all()
        ]
        kept = (
            page.is_checked(f"input[name='base-client_hosts'][value='{lab2}']"),
            page.is_checked(f"input[name='base-client_hosts'][value='{lab3}']"),
            page.is_checked("#id_base-shared_database"),
        )
        page.screenshot(path=str(ARTIFACTS / "campaign-form-client-hosts.png"), full_page=True)

    assert [row.split(" ", 1)[1] for row in matrix] == ["pgbench on the server yes", "pgbench on lab3 yes"], matrix
    assert kept == (True, True, True)
    assert not Campaign.objects.exists() and not Run.objects.exists()
    assert not violations, violations


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_preset_is_filled_in_again_for_the_hosts_chosen(page_server: str) -> None:
    hosts = [make_host(name=name, address=f"10.200.0.{n}", memory_bytes=24 * 2**30, cpu_cores=2) for name, n in
             (("lab1", 11), ("lab2", 12))]  # fmt: skip
    for host in hosts:
        for kind, size in (("ssd", 2**31), ("hdd", 2**30), ("ram", 768 * 2**20)):
            make_device(host, name=kind, kind=kind, path=f"/dev/disk/by-id/{host.name}-{kind}", wipe_allowed=True,
                        capacity_bytes=size)  # fmt: skip
        make_pg_install(host)
    make_host(name="lab3", address="10.200.0.13", enabled=False)
    lab1, lab2 = (host.pk for host in hosts)
    devices = {f"{d.host.name}:{d.name}": str(d.pk) for host in hosts for d in host.devices.all()}
    make_user("otto", "operator", password=PASSWORD)
    form = "/campaigns/new/?preset=ssd-vs-hdd"
    with signed_in(page_server, "otto", form, height=2600) as (page, violations, _errors):
        default = page.input_value("#id_description")
        page.check(f"#preset-hosts input[value='{lab2}']")  # the script fills the preset in again at once
        page.wait_for_url(f"**/campaigns/new/?preset=ssd-vs-hdd&host={lab1}&host={lab2}")
        both = page.input_value("#id_description")
        swept = [box.get_attribute("value") or "" for box in page.locator("input[name='device']:checked").all()]
        page.locator("#preset-hosts").screenshot(path=str(ARTIFACTS / "campaign-form-preset-two-hosts.png"))
        page.click("#preview")
        page.wait_for_selector("#queue")
        matrix = page.text_content("#matrix-preview") or ""
        ticked_after_preview = [page.is_checked(f"#preset-hosts input[value='{pk}']") for pk in (lab1, lab2)]
        page.screenshot(path=str(ARTIFACTS / "campaign-form-preset-hosts.png"), full_page=True)
        page.fill("#id_scale", "4, 28")  # the user's own change: 10 clients on 4 branch rows
        page.click("#preview")
        page.wait_for_selector("#contention-warning")
        warning = " ".join((page.text_content("#contention-warning") or "").split())
        method = " ".join((page.text_content("#method-warnings") or "").split())
        page.locator("#method-warnings").screenshot(path=str(ARTIFACTS / "campaign-form-method.png"))
        page.locator("#contention-warning").screenshot(path=str(ARTIFACTS / "campaign-form-contention.png"))
        page.goto(f"{page_server}/campaigns/new/?preset=mount-options")
        page.select_option("#preset-host", label="lab2 (24 GiB RAM)")
        page.wait_for_url(f"**/campaigns/new/?preset=mount-options&host={lab2}")
        server = page.input_value("#id_base-server_host")
        page.locator("#preset-hosts").screenshot(path=str(ARTIFACTS / "campaign-form-preset-host.png"))

    assert "Host: lab1 (by default: of the hosts that can run it (lab1, lab2), it has the most wipeable" in default
    assert "impossible on these devices" in default
    assert "Hosts: lab1, lab2 (chosen)." in both
    assert sorted(swept) == sorted(devices[name] for name in ("lab1:ssd", "lab1:hdd", "lab2:ssd", "lab2:hdd"))
    assert "12 configurations × 3 = 36 runs" in " ".join(matrix.split()) and "contention-warning" not in matrix
    assert "Scale below clients: in 4 configurations the clients outnumber" in warning
    assert "#3: scale 4 for 10 clients (lab1:hdd · scale 4 · 10 clients/2 threads)" in warning
    # scale 4 and 28 fit in 24 GiB of RAM, and the runs last less than two checkpoint_timeouts
    assert "Memory tier in 24 configurations" in method and "this campaign compares storage" in method
    assert "Run length in 24 configurations" in method
    assert ticked_after_preview == [True, True]
    assert server == str(lab2)
    assert not violations, violations
