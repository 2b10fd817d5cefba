"""Share links: the token (256 bits, only its hash kept), the shared pages of a run, a campaign
and a comparison opened logged out showing only what was shared, revoke and expiry (404 alike),
who may revoke, the list of one's links, the audit log, refusals, and the admin's list."""

import base64
import hashlib
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import serializers
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.campaigns.matrix import Variable
from runs.campaigns.services.campaigns import campaign_create
from runs.compare.query import ComparisonQuery
from runs.compare.services.shares import ShareRefused, share_create, share_resolve
from runs.models import AuditAction, AuditEvent, Campaign, Device, Host, PgInstall, Run, RunSample, ShareLink
from runs.tests.campaigns.test_campaigns import plan_on
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db

OTHER_RUN = 987654  # an id that appears nowhere on a page unless that run is shown
HOST_ADDRESS = "10.200.0.11"  # make_host's
CLIENT_ADDRESS = "10.200.0.12"
DEVICE_PATH = "/dev/disk/by-id/ata-TEST_SSD_1"  # make_device's


def environment(reused_from: int | None = None) -> dict[str, Any]:
    """What a finished run records, with every kind of fact a shared page must leave out."""
    pgbench = f"/usr/lib/postgresql/15/bin/pgbench -h {HOST_ADDRESS} -p 54321 -c 2 bench"
    settings = {"shared_buffers": "16384", "unix_socket_directories": "/var/lib/benchlab/x", "listen_addresses": "*"}
    machine = {"cpu_model": "Xeon E-2276G", "cpu_cores": 12, "memory_bytes": 2**35, "kernel": "6.1.0-28-amd64"}
    return {
        "host": machine | {"name": "lab1", "address": HOST_ADDRESS, "hostname": "lab1.example.internal",
                           "distribution": "Debian 12", "by_id": {DEVICE_PATH: "/dev/sdb"}},
        "client": machine | {"name": "lab2", "address": CLIENT_ADDRESS, "hostname": "lab2.example.internal"},
        "device": {"name": "ssd0", "kind": "ssd", "path": DEVICE_PATH, "node": "/dev/sdb", "model": "TEST SSD",
                   "serial": "SERIAL-123", "capacity_bytes": 2**30},
        "filesystem": {"type": "ext4", "mkfs_command": f"mkfs.ext4 -F {DEVICE_PATH}", "mount_options": "rw,noatime"},
        "postgresql": {"version": "PostgreSQL 15.19", "bin_dir": "/usr/lib/postgresql/15/bin", "block_size": 8192,
                       "wal_block_size": 8192, "non_default_settings": settings},
        "pgbench": {"version": "pgbench (PostgreSQL) 15.19", "host": "lab2", "command": pgbench},
        "init_command": "pgbench -i -s 1",
        "reuse": {"reused_from_run": reused_from, "reuse_refused": "", "kept_for_next_run": False},
    }  # fmt: skip


@pytest.fixture
def lab() -> tuple[Host, Device, PgInstall]:
    host = make_host()
    return host, make_device(host), make_pg_install(host)


@pytest.fixture
def vera(client_for: ClientFactory) -> Client:
    return client_for("vera")


@pytest.fixture
def anonymous() -> Client:
    return Client()


def done_run(lab: tuple[Host, Device, PgInstall], tps: float = 1000.0, **fields: Any) -> Run:
    run = make_run(*lab, steady_tps_mean=tps, tps=tps, environment=fields.pop("environment", environment()), **fields)
    RunSample.objects.bulk_create(RunSample(run=run, second=s, tps=tps + s, latency_ms=2.0) for s in range(1, 6))
    return run


def share_url(response: Any) -> str:
    """The path of the link the "my shares" page shows once, after making it."""
    match = re.search(r'id="new-share-url" value="http://testserver(/s/[^/"]+/)"', response.content.decode())
    assert match, response.content.decode()[:2000]
    return match.group(1)


def make_share(client: Client, **fields: Any) -> str:
    response = client.post(reverse("share-new"), fields)
    assert response.status_code == 302 and response["Location"] == reverse("shares"), response.content.decode()[:2000]
    shown = client.get(reverse("shares"))
    assert 'id="new-share-url"' not in client.get(reverse("shares")).content.decode()  # shown once only
    return share_url(shown)


def test_a_token_has_256_random_bits_and_only_its_hash_is_stored(users: dict[str, User], lab: Any) -> None:
    run = done_run(lab)
    link, token = share_create(kind="run", target=run, by=users["vera"])
    _, other = share_create(kind="run", target=run, by=users["vera"])

    assert len(base64.urlsafe_b64decode(token + "=")) * 8 == 256 and token != other
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    stored = serializers.serialize("json", [ShareLink.objects.get(pk=link.pk), *AuditEvent.objects.all()])
    assert token not in stored and link.token_hash in stored
    assert share_resolve(token) == link and share_resolve(link.token_hash) is None


def test_the_new_link_is_shown_once_with_a_copy_button(vera: Client, lab: Any) -> None:
    run = done_run(lab)
    made = vera.post(reverse("share-new"), {"kind": "run", "target": run.pk, "title": "ext4 on the SSD"})
    assert made.status_code == 302  # to the list: reloading it makes no second link
    response = vera.get(made["Location"])
    url = share_url(response)

    page = response.content.decode()
    assert 'id="copy-share"' in page and "js/shares.js" in page
    link = ShareLink.objects.get()
    assert (link.run, link.title, link.created_by.username) == (run, "ext4 on the SSD", "vera")
    assert link.expires_at is None  # no expiry asked for
    assert url not in vera.get(reverse("shares")).content.decode()  # shown once: the list has only its hash


def test_a_shared_run_opens_logged_out_and_shows_that_run_only(vera: Client, anonymous: Client, lab: Any) -> None:
    other = done_run(lab, pk=OTHER_RUN)
    run = done_run(lab, environment=environment(reused_from=other.pk), campaign=None)
    url = make_share(vera, kind="run", target=run.pk, expires_days="7", title="Commit latency on ext4")

    response = anonymous.get(url)

    page = response.content.decode()
    assert response.status_code == 200
    assert f"Run {run.pk}" in page and "Commit latency on ext4" in page and "Xeon E-2276G" in page
    assert "reused from an earlier run" in page and "rw,noatime" in page and "shared_buffers=128MB" in page
    hidden = [str(OTHER_RUN), HOST_ADDRESS, CLIENT_ADDRESS, DEVICE_PATH, "/dev/sdb", "/usr/lib/postgresql",
              "/var/lib/benchlab", "example.internal", "SERIAL-123", "mkfs.ext4", "Raw outputs", "/outputs/",
              'href="/runs/', 'href="/campaigns/', 'href="/admin/', "Inventory", "Run again", "Share a read-only link",
              'id="cancel"', "/events"]  # fmt: skip
    assert [text for text in hidden if text in page] == []
    assert response["X-Robots-Tag"].startswith("noindex") and response["Referrer-Policy"] == "no-referrer"
    # The rest of benchlab still asks for an account.
    for path in [reverse("run-detail", args=[run.pk]), reverse("run-detail", args=[OTHER_RUN]), reverse("home"),
                 reverse("run-artifact", args=[run.pk, "pgbench.stdout.txt"]), reverse("runs")]:  # fmt: skip
        assert anonymous.get(path)["Location"].startswith(reverse("login")), path


def test_a_shared_failed_run_says_where_it_failed_but_not_its_messages(
    vera: Client, anonymous: Client, lab: Any
) -> None:
    run = make_run(*lab, state="failed", failed_step="preparing_storage", error=f"mkfs refused {DEVICE_PATH}",
                   failed_command=f"mkfs.ext4 {DEVICE_PATH}", failed_output="device busy")  # fmt: skip
    url = make_share(vera, kind="run", target=run.pk)

    page = anonymous.get(url).content.decode()

    assert "Failed while" in page
    assert [text for text in (DEVICE_PATH, "mkfs", "device busy") if text in page] == []


def test_a_shared_run_gives_its_samples_and_nothing_of_a_comparison(vera: Client, anonymous: Client, lab: Any) -> None:
    run = done_run(lab)
    url = make_share(vera, kind="run", target=run.pk)

    samples = anonymous.get(f"{url}samples.json")

    assert samples.status_code == 200 and samples.json()["tps"] == [1001.0, 1002.0, 1003.0, 1004.0, 1005.0]
    for part in ("data.json", "print/", "export.csv", "compare/", "compare/data.json", "nothing"):
        assert anonymous.get(f"{url}{part}").status_code == 404, part


def campaign_of_two_configurations(users: dict[str, User]) -> Campaign:
    host = make_host(name="lab3", address="10.200.0.13")
    make_device(host, name="hdd", kind="hdd", path="/dev/disk/by-id/ata-HDD_3", wipe_allowed=True)
    make_pg_install(host)
    campaign = campaign_create(
        plan=plan_on(host, [Variable("mount_options", ("noatime", "(none)"))], repetitions=2), by=users["otto"]
    )
    for index, run in enumerate(campaign.runs.order_by("pk")):
        Run.objects.filter(pk=run.pk).update(state="done", steady_tps_mean=1000.0 + index, tps=1000.0 + index)
    Run.objects.filter(pk=run.pk).update(state="failed", error=f"mkfs refused {DEVICE_PATH}")  # the last one
    return campaign


def test_a_shared_campaign_shows_its_matrix_without_links_and_its_comparison(
    users: dict[str, User], vera: Client, anonymous: Client
) -> None:
    campaign = campaign_of_two_configurations(users)
    url = make_share(vera, kind="campaign", target=campaign.pk)

    response = anonymous.get(url)

    page = response.content.decode()
    assert response.status_code == 200 and campaign.name in page and 'state-done">done</span>' in page
    hidden = ['href="/runs/', "Cancel", "Queue failed runs again", 'href="/compare/', "by otto", "/events", DEVICE_PATH]
    assert [text for text in hidden if text in page] == []
    assert f'href="{url}compare/"' in page
    comparison = anonymous.get(f"{url}compare/")
    assert comparison.status_code == 200 and 'id="compare-controls"' not in comparison.content.decode()
    data = anonymous.get(f"{url}compare/data.json").json()
    assert sorted(run for group in data["groups"] for run in group["runs"]) == sorted(
        campaign.runs.values_list("pk", flat=True)
    )
    assert anonymous.get(f"{url}compare/print/").status_code == 200
    assert anonymous.get(f"{url}compare/export.csv?what=summary").status_code == 200
    run = campaign.runs.first()
    assert run is not None and anonymous.get(reverse("run-detail", args=[run.pk]))["Location"].startswith("/accounts")


def test_a_shared_comparison_shows_exactly_its_runs(vera: Client, anonymous: Client, lab: Any) -> None:
    done_run(lab, pk=OTHER_RUN)
    runs = [done_run(lab, 1000.0, mount_options=""), done_run(lab, 1500.0, mount_options="noatime")]
    ids = ",".join(str(run.pk) for run in runs)
    url = make_share(vera, kind="comparison", runs=ids, baseline="1", title="noatime or not")

    page = anonymous.get(url)
    data = anonymous.get(f"{url}data.json").json()
    summary = anonymous.get(f"{url}export.json?what=summary")

    text = page.content.decode()
    assert page.status_code == 200 and "noatime or not" in text
    assert 'id="compare-controls"' not in text and 'href="/runs/' not in text and str(OTHER_RUN) not in text
    assert [group["runs"] for group in data["groups"]] == [[runs[0].pk], [runs[1].pk]]
    assert data["groups"][1]["baseline"]  # the options shared with the runs
    assert summary.status_code == 200 and str(OTHER_RUN) not in summary.content.decode()
    assert anonymous.get(f"{url}export.csv?what=series").status_code == 200
    assert anonymous.get(f"{url}print/").status_code == 200
    assert anonymous.get(f"{url}samples.json").status_code == 404


def test_a_comparison_of_a_campaign_keeps_the_runs_it_had_when_shared(
    users: dict[str, User], vera: Client, anonymous: Client
) -> None:
    campaign = campaign_of_two_configurations(users)
    before = sorted(campaign.runs.values_list("pk", flat=True))
    url = make_share(vera, kind="comparison", campaign=campaign.pk)
    first = campaign.runs.order_by("pk").first()
    assert first is not None
    make_run(first.server_host, first.device, first.pg_install, campaign=campaign, configuration=first.configuration)

    data = anonymous.get(f"{url}data.json").json()

    assert sorted(ShareLink.objects.get().run_ids) == before
    assert sorted(run for group in data["groups"] for run in group["runs"]) == before


def test_revoked_expired_and_unknown_links_answer_the_same_404(vera: Client, anonymous: Client, lab: Any) -> None:
    run = done_run(lab)
    revoked, expired = make_share(vera, kind="run", target=run.pk), make_share(vera, kind="run", target=run.pk)
    assert anonymous.get(revoked).status_code == anonymous.get(expired).status_code == 200
    first, second = ShareLink.objects.order_by("pk")

    assert vera.post(reverse("share-revoke", args=[first.pk])).status_code == 302
    ShareLink.objects.filter(pk=second.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    answers = [anonymous.get(path) for path in (revoked, expired, "/s/" + "x" * 43 + "/")]
    assert [answer.status_code for answer in answers] == [404, 404, 404]
    assert len({answer.content for answer in answers}) == 1  # no hint which
    assert anonymous.get(f"{revoked}samples.json").status_code == 404
    assert all(answer["Referrer-Policy"] == "no-referrer" for answer in answers)


def test_views_of_the_page_are_counted_not_its_data(vera: Client, anonymous: Client, lab: Any) -> None:
    run = done_run(lab)
    url = make_share(vera, kind="run", target=run.pk)

    anonymous.get(url)
    anonymous.get(url)
    anonymous.get(f"{url}samples.json")

    link = ShareLink.objects.get()
    assert link.views == 2 and link.last_viewed_at is not None


def test_only_its_owner_or_an_admin_revokes_a_link(client_for: ClientFactory, lab: Any) -> None:
    run = done_run(lab)
    make_share(client_for("otto"), kind="run", target=run.pk)
    make_share(client_for("otto"), kind="run", target=run.pk)
    mine, theirs = ShareLink.objects.order_by("pk")

    refused = client_for("vera").post(reverse("share-revoke", args=[mine.pk]))
    by_owner = client_for("otto").post(reverse("share-revoke", args=[mine.pk]))
    by_admin = client_for("ada").post(reverse("share-revoke", args=[theirs.pk]))

    assert refused.status_code == 403 and "Only otto, who made this link, or an admin" in refused.content.decode()
    assert by_owner.status_code == by_admin.status_code == 302
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_by is not None and mine.revoked_by.username == "otto"
    assert theirs.revoked_by is not None and theirs.revoked_by.username == "ada"


def test_revoking_asks_first_showing_how_the_link_has_been_used(
    client_for: ClientFactory, anonymous: Client, lab: Any
) -> None:
    run = done_run(lab)
    shared = make_share(client_for("otto"), kind="run", target=run.pk, title="for the vendor")
    anonymous.get(shared)
    anonymous.get(shared)
    link = ShareLink.objects.get()
    url = reverse("share-revoke", args=[link.pk])

    listed = client_for("otto").get(reverse("shares")).content.decode()
    asked = client_for("otto").get(url)
    page = asked.content.decode()
    link.refresh_from_db()
    stranger = client_for("vera").get(url)

    assert f'<a class="button small" href="{url}">Revoke…</a>' in listed  # the list posts nothing itself
    assert asked.status_code == 200 and link.revoked_at is None and anonymous.get(shared).status_code == 200
    assert f"Revoke share link {link.pk} to run {run.pk}?" in page and "for the vendor" in page
    last = f"{timezone.localtime(link.last_viewed_at):%Y-%m-%d %H:%M} UTC"
    assert re.search(rf"has been opened 2 times, last on {last}; revoking it stops it working", page)
    assert 'id="share-state" class="share-state share-live">live<' in page and 'id="share-revoke"' in page
    assert stranger.status_code == 403 and "Only otto, who made this link, or an admin" in stranger.content.decode()

    assert client_for("otto").post(url).status_code == 302
    again = client_for("otto").get(url).content.decode()
    assert anonymous.get(shared).status_code == 404
    assert "This link is revoked already" in again and 'id="share-revoke"' not in again and "by otto" in again
    events = AuditEvent.objects.filter(action=AuditAction.SHARE_REVOKED, object_id=str(link.pk))
    assert [e.actor_name for e in events] == ["otto"]


def test_my_shares_lists_mine_and_an_admin_sees_everyones(client_for: ClientFactory, lab: Any) -> None:
    run = done_run(lab)
    make_share(client_for("vera"), kind="run", target=run.pk, title="the link of vera")
    make_share(client_for("otto"), kind="run", target=run.pk, title="the link of otto")

    as_vera = client_for("vera").get(reverse("shares")).content.decode()
    as_ada = client_for("ada").get(reverse("shares")).content.decode()

    assert "the link of vera" in as_vera and "the link of otto" not in as_vera
    assert "the link of vera" in as_ada and "the link of otto" in as_ada and "<th>Owner</th>" in as_ada


def test_making_and_revoking_a_link_are_audited(client_for: ClientFactory, lab: Any) -> None:
    run = done_run(lab)
    make_share(client_for("vera"), kind="run", target=run.pk, expires_days="30")
    link = ShareLink.objects.get()
    client_for("ada").post(reverse("share-revoke", args=[link.pk]))
    client_for("ada").post(reverse("share-revoke", args=[link.pk]))  # again: nothing more happens

    events = AuditEvent.objects.filter(object_type="share link", object_id=str(link.pk)).order_by("at", "id")

    assert [(e.action, e.actor_name) for e in events] == [
        (AuditAction.SHARE_CREATED, "vera"),
        (AuditAction.SHARE_REVOKED, "ada"),
    ]
    assert f"run {run.pk}, expires" in events[0].message and events[1].message == "made by vera"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "host", "target": "1"}, "kind must be one of run, campaign, comparison, not 'host'"),
        ({"kind": "run", "expires_days": "0"}, "expires_days (days until the link expires, or empty: never) must be"),
        ({"kind": "run", "expires_days": "1000"}, "a whole number from 1 to 365, not '1000'"),
        ({"kind": "run", "target": str(OTHER_RUN)}, f"there is no run {OTHER_RUN}"),
        ({"kind": "campaign", "target": "abc"}, "target (the campaign's id) must be an id"),
        ({"kind": "comparison", "runs": str(OTHER_RUN)}, f"cannot be shared: there is no run {OTHER_RUN}"),
        ({"kind": "comparison"}, "a comparison needs runs"),
        ({"kind": "run", "title": "x" * 201}, "The title is at most 200 characters, not 201."),
    ],
)
def test_bad_input_is_refused_with_what_is_wrong_and_nothing_is_made(
    vera: Client, lab: Any, fields: dict[str, str], message: str
) -> None:
    run = done_run(lab)

    response = vera.post(reverse("share-new"), {"target": str(run.pk)} | fields)

    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not ShareLink.objects.exists() and not AuditEvent.objects.filter(action=AuditAction.SHARE_CREATED).exists()


def test_the_service_refuses_an_expiry_in_the_past_and_a_kind_that_is_not_its_target(
    users: dict[str, User], lab: Any
) -> None:
    run = done_run(lab)

    with pytest.raises(ShareRefused, match="must be in the future"):
        share_create(kind="run", target=run, by=users["vera"], expires_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(ShareRefused, match="not 'campaign'"):
        share_create(kind="campaign", target=run, by=users["vera"])
    with pytest.raises(ShareRefused, match="needs the viewer role"):
        share_create(kind="comparison", target=ComparisonQuery(run_ids=(run.pk,)), by=users["nora"])


def test_the_share_form_is_on_each_page_but_not_on_a_shared_one(
    users: dict[str, User], vera: Client, anonymous: Client, lab: Any
) -> None:
    run = done_run(lab)
    campaign = campaign_of_two_configurations(users)
    pages = {
        "run": vera.get(reverse("run-detail", args=[run.pk])),
        "campaign": vera.get(reverse("campaign-detail", args=[campaign.pk])),
        "comparison": vera.get(reverse("compare"), {"runs": str(run.pk)}),
    }
    for kind, response in pages.items():
        assert f'name="kind" value="{kind}"' in response.content.decode(), kind

    url = make_share(vera, kind="run", target=run.pk)
    assert 'action="/shares/new"' not in anonymous.get(url).content.decode()
    assert 'action="/shares/new"' not in vera.get(url).content.decode()  # signed in, a shared page is still read-only


def test_the_admin_lists_links_without_their_hash_and_revokes_them(client_for: ClientFactory, lab: Any) -> None:
    run = done_run(lab)
    make_share(client_for("vera"), kind="run", target=run.pk)
    link = ShareLink.objects.get()
    ada = client_for("ada")

    listing = ada.get(reverse("admin:runs_sharelink_changelist")).content.decode()
    detail = ada.get(reverse("admin:runs_sharelink_change", args=[link.pk])).content.decode()
    revoked = ada.post(
        reverse("admin:runs_sharelink_changelist"), {"action": "revoke", "_selected_action": [str(link.pk)]}
    )

    assert f"run {run.pk}" in listing and link.token_hash not in listing + detail
    assert revoked.status_code == 302
    link.refresh_from_db()
    assert link.revoked_by is not None and link.revoked_by.username == "ada"
    assert AuditEvent.objects.filter(action=AuditAction.SHARE_REVOKED, actor_name="ada").count() == 1
