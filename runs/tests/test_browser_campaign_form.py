"""The campaign form in a real browser: a base run with two client hosts sharing one database,
and client hosts swept one at a time, previewed (nothing queued). Screenshots go to
test-artifacts/."""

import pytest

from runs.models import Campaign, Run
from runs.tests.browser import ARTIFACTS, PASSWORD, chromium, log_in
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
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium(height=2400) as (context, violations):
        page = context.new_page()
        log_in(page, page_server, "otto")
        page.goto(f"{page_server}/campaigns/new/")
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
