"""The Method panel on a run's page and on its shared page, the columns lists read (memory tier,
durable), and accepting a warning with a reason: kept, audited, shown; refused with a message
(and nothing changed) without a reason or for a warning the run does not have."""

from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from runs.campaigns.services.adaptive import campaign_advance
from runs.campaigns.services.campaigns import campaign_create
from runs.compare.services.shares import share_create
from runs.method.selectors import method_columns
from runs.models import AuditAction, AuditEvent, Run, RunSample, ShareKind
from runs.tests.browser import ARTIFACTS, PASSWORD, signed_in
from runs.tests.campaigns.test_campaigns import campaign_form, devices_and_options, finish_round, lab1, plan_on
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user, run_form_fields
from runs.tests.web.test_api import api_client, run_body

MIB, GIB = 2**20, 2**30
BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def recorded_run(host_name: str = "lab1", **fields: Any) -> Run:
    """A done run on a 24 GiB host whose 150 MiB database fit in RAM, mounted with barrier=0,
    with a checkpoint during its window and 30 steady seconds of tps."""
    host = make_host(name=host_name, memory_bytes=24 * GIB)
    environment = {
        "host": {"memory_bytes": 24 * GIB},
        "filesystem": {"mount_options": "rw,relatime,barrier=0"},
        "method": {
            "database_bytes": 150 * MIB,
            "shared_buffers_bytes": 128 * MIB,
            "device": {"write_cache": "write back", "scheduler": "mq-deadline"},
            "checkpoints": {"timed": 1, "requested": 0, "events": [{"second": 12.0, "kind": "time", "duration_s": 3}]},
            "state": {"cache": "warm", "data": "fresh", "checkpoint_before": True, "settle_s": 5},
            "random_seed": 1234,
            "host": {"governor": "performance", "boost": False},
            "during": {"load_1m_start": 0.1, "load_1m_end": 0.9, "cpu_count": 2, "busiest": []},
        },
    }
    otto = User.objects.filter(username="otto").first()  # the operator who queued it, where a test has one
    defaults = {"queued_by": otto, "scale": 10, "clients": 4, "duration_s": 30, "mount_options": "barrier=0",
                "environment": environment, "tps": 1003.0, "steady_tps_mean": 1010.0,
                "results_stored_at": timezone.now()}  # fmt: skip
    run = make_run(host, make_device(host), make_pg_install(host), **(defaults | fields))
    RunSample.objects.bulk_create(
        RunSample(run=run, second=s, tps=1000.0 + 10 * (s % 3), latency_ms=4.0) for s in range(1, 31)
    )
    Run.objects.filter(pk=run.pk).update(**method_columns(run))
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_the_list_columns_are_read_off_the_recorded_facts() -> None:
    run = recorded_run()

    assert (run.memory_tier, run.durable, run.steady) == ("fits in RAM", False, True)
    durable = recorded_run("lab2", mount_options="", environment={"host": {"memory_bytes": GIB}})
    assert (durable.memory_tier, durable.durable) == ("", True)  # no database size recorded: no tier


@pytest.mark.django_db
def test_a_warning_accepted_with_a_reason_is_kept_audited_and_shown(client_for: ClientFactory) -> None:
    run = recorded_run()
    otto = client_for("otto")

    response = otto.post(
        reverse("run-method-accept", args=[run.pk]), {"check": "durability", "reason": "seed 002: barrier=0 on purpose"}
    )

    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{run.pk}/#method")
    run.refresh_from_db()
    assert run.method_overrides["durability"]["reason"] == "seed 002: barrier=0 on purpose"
    assert run.method_overrides["durability"]["by"] == "otto"
    event = AuditEvent.objects.get(action=AuditAction.RUN_WARNING_ACCEPTED)
    assert (event.object_id, event.message) == (str(run.pk), "Durability: seed 002: barrier=0 on purpose")
    page = otto.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Accepted by otto: “seed 002: barrier=0 on purpose”" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("check", "reason", "message"),
    [
        ("durability", "  ", "Say why the warning does not matter here"),
        ("durability", "x" * 501, "The reason is 501 characters long: at most 500 are kept."),
        (
            "contention",
            "why not",
            "has no open warning &#x27;contention&#x27; (its open warnings: memory, length, durability)",
        ),
    ],
)
def test_accepting_is_refused_without_a_reason_or_an_open_warning(
    client_for: ClientFactory, check: str, reason: str, message: str
) -> None:
    run = recorded_run()

    response = client_for("otto").post(reverse("run-method-accept", args=[run.pk]), {"check": check, "reason": reason})

    assert response.status_code == 400
    assert message in response.content.decode()
    run.refresh_from_db()
    assert run.method_overrides == {} and not AuditEvent.objects.exists()


@pytest.mark.django_db
def test_a_viewer_or_another_operator_may_not_accept_a_warning(client_for: ClientFactory) -> None:
    run = recorded_run(queued_by=make_user("oskar", "operator"))

    by_viewer = client_for("vera").post(reverse("run-method-accept", args=[run.pk]), {"check": "memory", "reason": "x"})
    by_otto = client_for("otto").post(reverse("run-method-accept", args=[run.pk]), {"check": "memory", "reason": "x"})
    by_admin = client_for("ada").post(reverse("run-method-accept", args=[run.pk]), {"check": "memory", "reason": "x"})

    assert (by_viewer.status_code, by_otto.status_code, by_admin.status_code) == (403, 403, 302)
    assert "Only oskar, who queued this run, or an admin can accept a warning of it." in by_otto.content.decode()
    run.refresh_from_db()
    assert set(run.method_overrides) == {"memory"} and run.method_overrides["memory"]["by"] == "ada"


@BROWSER
def test_the_method_panel_on_the_run_page_the_shared_page_and_the_help_page(web_server: str) -> None:
    make_user("otto", "operator", password=PASSWORD)
    run = recorded_run()
    _, token = share_create(kind=ShareKind.RUN, target=run, by=make_user("ada", "admin"))
    with signed_in(web_server, "otto", f"/runs/{run.pk}/#method", height=1000) as (page, violations, errors):
        page.locator("#method").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "method-panel.png"), full_page=False)
        summary = page.text_content("#method-summary") or ""
        rows = {
            key: page.text_content(f"#method-{key}") or "" for key in ("memory", "durability", "seed", "contention")
        }
        page.fill("#method-memory input[name=reason]", "a CPU-bound study on purpose")
        page.click("#method-memory button")
        page.wait_for_selector("#method-memory .method-accepted")
        accepted = page.text_content("#method-memory") or ""
        page.goto(f"{web_server}/s/{token}/")
        shared = page.text_content("#method") or ""
        has_form = page.locator("#method form").count()
        page.click("#method-summary a")
        page.wait_for_selector("#check-durability")
        page.screenshot(path=str(ARTIFACTS / "method-help.png"), full_page=False)

    assert summary.startswith("3 warnings: memory tier, run length, durability.")
    assert "fits in RAM: database 150 MiB, shared_buffers 128 MiB, RAM 24 GiB" in rows["memory"]
    assert "not durable: mounted with barrier=0; the device's write cache is volatile" in rows["durability"]
    assert "--random-seed=1234" in rows["seed"] and "passed" in rows["seed"]
    assert "scale 10 ≥ 4 clients" in rows["contention"]
    assert "Accepted by otto: “a CPU-bound study on purpose”" in accepted
    assert "Accepted: “a CPU-bound study on purpose”" in shared and "otto" not in shared
    assert has_form == 0  # nobody accepts anything on a shared page
    assert not violations and not errors, (violations, errors)


# ---- before queueing: the queue form ----


@pytest.mark.django_db
def test_the_queue_form_checks_the_method_without_queueing_and_queues_with_a_reason(
    client_for: ClientFactory,
) -> None:
    host = make_host(memory_bytes=24 * GIB)
    fields = run_form_fields(host, make_device(host, wipe_allowed=True), make_pg_install(host), scale=4, clients=8)
    otto = client_for("otto")

    checked = otto.post(reverse("run-new"), {**fields, "check": "1"})

    page = checked.content.decode()
    assert checked.status_code == 200 and not Run.objects.exists()
    assert "Read them before you queue" in page
    assert "8 clients share scale 4&#x27;s 4 branch rows" in page
    assert "fits in RAM: database 60 MiB, shared_buffers 64 MiB" not in page  # 60 MiB fits in its 64 MB buffers
    assert "fits in shared buffers: database 60 MiB, shared_buffers 64 MiB, RAM 24 GiB" in page

    queued = otto.post(reverse("run-new"), {**fields, "method_reason": "a smoke test, not a measurement"})

    run = Run.objects.get()
    assert queued.status_code == 302
    assert set(run.method_overrides) == {"memory", "contention", "length"}
    assert {entry["reason"] for entry in run.method_overrides.values()} == {"a smoke test, not a measurement"}


@pytest.mark.django_db
def test_a_reason_too_long_refuses_the_run(client_for: ClientFactory) -> None:
    host = make_host()
    fields = run_form_fields(host, make_device(host, wipe_allowed=True), make_pg_install(host))

    response = client_for("otto").post(reverse("run-new"), {**fields, "method_reason": "x" * 501})

    assert response.status_code == 400 and not Run.objects.exists()
    assert "Ensure this value has at most 500 characters (it has 501)." in response.content.decode()


@BROWSER
def test_run_again_shows_the_method_checks_of_the_run_it_repeats(web_server: str) -> None:
    make_user("otto", "operator", password=PASSWORD)
    run = recorded_run(scale=2, clients=8)
    with signed_in(web_server, "otto", f"/runs/new/?again={run.pk}", height=1400) as (page, violations, errors):
        page.locator("#method").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "method-run-form.png"), full_page=False)
        summary = page.text_content("#method-summary") or ""
        has_accept_forms = page.locator("#method form").count()

    assert summary.startswith("4 warnings: memory tier, branch-row contention, run length, durability.")
    assert "Read them before you queue" in summary
    assert has_accept_forms == 0  # accepted by the reason field of the form itself
    assert not violations and not errors, (violations, errors)


# ---- comparisons: the page, its report and a campaign's page ----


@BROWSER
def test_a_comparison_of_two_devices_that_fit_in_ram_says_so_in_its_method_panel(web_server: str) -> None:
    make_user("vera", "viewer", password=PASSWORD)
    ssd = recorded_run()
    hdd_device = make_device(ssd.server_host, name="hdd0", kind="hdd", path="/dev/disk/by-id/ata-TEST_HDD_1")
    hdd = make_run(
        ssd.server_host, hdd_device, ssd.pg_install, scale=10, clients=4, duration_s=30, environment=ssd.environment,
        mount_options="", results_stored_at=timezone.now(),
    )  # fmt: skip
    hdd.environment["filesystem"]["mount_options"] = "rw,relatime"
    hdd.save(update_fields=["environment"])
    path = f"/compare/?runs={ssd.pk},{hdd.pk}&group=device"
    with signed_in(web_server, "vera", path, height=900) as (page, violations, errors):
        page.locator("#method").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "method-comparison.png"), full_page=False)
        memory, durability = page.text_content("#method-memory") or "", page.text_content("#method-durability") or ""
        page.goto(f"{web_server}/compare/print/?runs={ssd.pk},{hdd.pk}&group=device")
        in_report = page.text_content("#method-summary") or ""

    assert "this compares storage, but 2 groups fit in memory" in memory
    assert "not durable: lab1:ssd0; the others are" in durability
    assert in_report.startswith("3 warnings: memory tier, durability, run length.")
    assert not violations and not errors, (violations, errors)


# ---- labels in lists, the API and exports ----


@pytest.mark.django_db
def test_the_labels_reach_the_run_list_the_api_and_the_comparisons_export(client_for: ClientFactory) -> None:
    run = recorded_run()
    other = recorded_run("lab2", mount_options="")
    other.environment["filesystem"]["mount_options"] = "rw"
    other.save(update_fields=["environment"])
    Run.objects.filter(pk=other.pk).update(**method_columns(other))
    vera = client_for("vera")

    listed = vera.get(reverse("runs")).content.decode()
    detail = vera.get(f"/api/runs/{run.pk}/").json()
    listed_api = {row["id"]: row for row in vera.get("/api/runs/").json()["results"]}
    export = vera.get(reverse("compare-export-json"), {"runs": f"{run.pk},{other.pk}", "what": "summary"}).json()

    assert listed.count(">not durable</span>") == 1 and listed.count(">fits in RAM</span>") == 2
    assert (listed_api[run.pk]["memory_tier"], listed_api[run.pk]["durable"]) == ("fits in RAM", False)
    assert [check["key"] for check in detail["method"] if check["status"] == "warning"] == [
        "memory",
        "length",
        "durability",
    ]
    first_metric = export["rows"][0]["metric"]
    tps = {row["configuration"]: row for row in export["rows"] if row["metric"] == first_metric}
    assert sorted((row["memory_tier"], row["durable"]) for row in tps.values()) == [
        ("fits in RAM", "no"),
        ("fits in RAM", "yes"),
    ]
    assert {check["key"]: check["status"] for check in export["method"]}["durability"] == "warning"


@pytest.mark.django_db
def test_the_api_queues_a_run_with_a_reason_for_its_warnings_and_refuses_one_too_long() -> None:
    client = api_client(make_user("otto", "operator"))
    body = run_body(workload="tpcb-like", scale=2, clients=8)

    too_long = client.post("/api/runs/", body | {"method_reason": "x" * 501}, format="json")
    queued = client.post("/api/runs/", body | {"method_reason": "smoke test"}, format="json")

    assert too_long.status_code == 400 and "method_reason" in too_long.json()
    assert queued.status_code == 201 and Run.objects.count() == 1
    run = Run.objects.get()
    assert set(run.method_overrides) == {"contention", "length"}  # the host's RAM is not probed: no tier
    assert run.method_overrides["contention"]["reason"] == "smoke test"


@pytest.mark.django_db
def test_a_campaign_queued_with_a_reason_keeps_it_on_every_run_for_its_warnings(client_for: ClientFactory) -> None:
    host = lab1()
    otto = client_for("otto")

    response = otto.post(reverse("campaign-new"), campaign_form(host, action="queue", method_reason="a smoke test"))

    assert response.status_code == 302
    runs = list(Run.objects.all())
    assert len(runs) == 12
    assert all(run.method_overrides["length"]["reason"] == "a smoke test" for run in runs)  # 5-second runs
    assert all(run.method_overrides["length"]["by"] == "otto" for run in runs)


@pytest.mark.django_db
def test_an_adaptive_campaigns_later_round_keeps_the_reason_its_configuration_was_queued_with() -> None:
    host = lab1()
    otto = make_user("otto", "operator")
    plan = plan_on(host, devices_and_options(host)[:1], repetitions=2, target_ci_pct=2.0, max_repetitions=4)
    accepted = campaign_create(plan=replace(plan, method_reason="a smoke test"), by=otto)
    silent = campaign_create(plan=plan, by=otto)

    for campaign in (accepted, silent):
        finish_round(campaign, {0: [100.0, 110.0], 1: [50.0, 60.0]})
        assert campaign_advance(campaign_id=campaign.pk) == 2

    later = Run.objects.filter(campaign=accepted, repetition=3)
    assert later.count() == 2 and all(run.method_overrides["length"]["reason"] == "a smoke test" for run in later)
    assert all(run.method_overrides["length"]["by"] == "otto" for run in later)  # who accepted it, not the round
    assert [run.method_overrides for run in Run.objects.filter(campaign=silent, repetition=3)] == [{}, {}]
