"""The run pages without a worker: the queue form's validation, "Run again", results, outputs,
the samples endpoint and the replayable event stream."""

import asyncio
import json
import re
from collections.abc import Callable

import pytest
from django.test import AsyncClient, Client
from django.urls import reverse

from runs.bench.services.observer import RunObserver
from runs.bench.services.runs import runs_enqueue
from runs.forms.runs import RUN_FIELDS
from runs.jobs import live
from runs.models import Host, Run, RunClient, RunSample, RunState, RunTransition
from runs.templatetags.run_page import link_runs
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, run_form_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def otto(client_for: ClientFactory) -> Client:
    return client_for("otto")


def form_data(**fields: object) -> dict[str, object]:
    """A valid queue form for a new host lab1 with a wipeable SSD, changed by `fields`."""
    host = make_host(name="lab1")
    device = make_device(host, wipe_allowed=True, capacity_bytes=2**30)
    return run_form_fields(host, device, make_pg_install(host), **fields)


def test_the_form_shows_every_field_of_a_run(otto: Client) -> None:
    form_data()  # a host, so there is a client host box to tick
    page = otto.get(reverse("run-new")).content.decode()

    assert [name for name in RUN_FIELDS if f'name="{name}"' not in page] == []


def test_a_valid_form_queues_the_run_and_shows_it(otto: Client) -> None:
    response = otto.post(reverse("run-new"), form_data())

    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run-detail", args=[run.pk])
    assert run.state == RunState.QUEUED and run.queued_by is not None and run.queued_by.username == "otto"
    assert list(run.transitions.values_list("state", flat=True)) == ["queued"]
    assert run.query_mode == "prepared" and run.warmup_s == 5


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"mount_options": "noatime,data=fast"}, "mount_options", "has a bad value for ext4"),
        ({"mount_options": "commit=\u0665"}, "mount_options", "'commit=\u0665' has a bad value for ext4"),
        ({"mkfs_options": "-i \uff18\uff11\uff19\uff12"}, "mkfs_options", "has a bad value for ext4"),
        ({"mount_options": "nodatacow"}, "mount_options", "not allowed for ext4"),
        ({"mkfs_options": "-l logdev=/dev/sda"}, "mkfs_options", "not allowed for ext4"),
        ({"threads": 8}, "threads", "threads cannot exceed clients"),
        ({"workload": "custom"}, "custom_script", "needs its script"),
        ({"workload": "custom", "custom_script": "SELECT 1; \\shell id"}, "custom_script", "\\shell is not allowed"),
        ({"pg_settings": "port = 5433"}, "pg_settings", "set by benchlab itself"),
        ({"pg_settings": "archive_command = 'id'"}, "pg_settings", "runs commands on the host"),
        ({"filesystem": "directory"}, "filesystem", "is a block device"),
        ({"scale": 0}, "scale", "scale must be between 1 and 100000; got 0."),
        ({"log_sampling_rate": "1.5"}, "log_sampling_rate", "must be between 0.0001 and 1; got 1.5."),
    ],
)
def test_mistakes_are_shown_beside_their_fields(
    otto: Client, changes: dict[str, object], field: str, message: str
) -> None:
    response = otto.post(reverse("run-new"), form_data(**changes))

    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors.get(field, [])), response.context["form"].errors
    # The errors' element has the id Django's aria-describedby on the field names.
    page = response.content.decode()
    tag = re.search(rf'<(?:input|select|textarea)[^>]*\bid="id_{field}"[^>]*>', page)
    assert f'id="id_{field}_error"' in page and tag and f"id_{field}_error" in tag[0], tag
    assert not Run.objects.exists()


def test_a_device_of_another_host_and_an_unwipeable_device_are_refused(otto: Client) -> None:
    data = form_data()
    other = make_host(name="lab2", address="10.0.0.2")
    foreign = make_device(other, name="ssd9", path="/dev/disk/by-id/x9")
    keep = make_device(Host.objects.get(name="lab1"), name="keep", path="/dev/disk/by-id/keep", wipe_allowed=False)

    foreign_errors = otto.post(reverse("run-new"), data | {"device": foreign.pk}).context["form"].errors
    keep_errors = otto.post(reverse("run-new"), data | {"device": keep.pk}).context["form"].errors

    assert "is not a device of lab1" in foreign_errors["device"][0]
    assert "not marked wipeable" in keep_errors["device"][0]


def test_run_again_opens_the_form_filled_with_the_runs_specification(otto: Client) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), mount_options="noatime", clients=7, threads=3)

    form = otto.get(reverse("run-new"), {"again": run.pk}).context["form"]

    assert form["mount_options"].value() == "noatime"
    assert form["clients"].value() == 7 and form["threads"].value() == 3
    assert form["server_host"].value() == host.pk


def test_the_results_page_shows_numbers_environment_and_outputs(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(
        host, make_device(host), make_pg_install(host), tps=2261.2, steady_tps_mean=2250.0, steady_tps_stddev=40.5,
        latency_avg_ms=0.88, latency_stddev_ms=0.31, warmup_s=2,
        environment={"filesystem": {"type": "ext4", "mount_options": "rw,noatime,nobarrier"},
                     "postgresql": {"version": "PostgreSQL 15.20", "non_default_settings": {"shared_buffers": "4096"}}},
        metrics={"cache_hit_ratio": 0.9881, "checkpoints": 1, "buffers_written": 120},
    )  # fmt: skip
    RunSample.objects.bulk_create(
        [RunSample(run=run, second=s, tps=2000 + s, latency_ms=1.0, warmup=s <= 2) for s in range(1, 8)]
    )

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    data = client_for("vera").get(reverse("run-samples-json", args=[run.pk])).json()
    output = client_for("vera").get(reverse("run-artifact", args=[run.pk, "pgbench.stdout.txt"]), {"download": "1"})

    for text in ["2261.2", "2250.0 ± 40.5", "0.880 ms ± 0.310 ms", "rw,noatime,nobarrier", "shared_buffers=32MB",
                 "0.9881", "pgbench.stdout.txt"]:  # fmt: skip
        assert text in page, text
    assert data["seconds"] == list(range(1, 8)) and data["warmup"][:2] == [True, True] and data["warmup_s"] == 2
    assert output["Content-Disposition"] == f'attachment; filename="run-{run.pk}-pgbench.stdout.txt"'
    assert output.content == b"tps = 123.4\n"


def test_the_results_page_shows_latency_percentiles_and_the_client_host(client_for: ClientFactory) -> None:
    host, client_host = make_host(), make_host(name="client1", address="10.200.0.12")
    latency = {
        "count": 5210,
        "sampling_rate": 0.5,
        "mean_ms": 1.1,
        "min_ms": 0.2,
        "p50_ms": 0.9,
        "p90_ms": 1.8,
        "p95_ms": 2.25,
        "p99_ms": 4.5,
        "p999_ms": 9.75,
        "max_ms": 31.0,
        "skipped": 0,
        "failed": 0,
    }
    run = make_run(
        host, make_device(host), make_pg_install(host), client_host=client_host, metrics={"latency": latency},
        environment={"client": {"name": "client1", "address": "10.200.0.12", "hostname": "lab2", "kernel": "6.1"},
                     "pgbench": {"version": "pgbench (PostgreSQL) 15.20", "host": "client1", "command": "pgbench"}},
    )  # fmt: skip
    without_log = make_run(
        host, make_device(host, name="ssd1", path="/dev/disk/by-id/x"), make_pg_install(host, bin_dir="/b")
    )

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    other = client_for("vera").get(reverse("run-detail", args=[without_log.pk])).content.decode()

    for text in ["pgbench on client1 over TCP", "5210 transactions, sampled at 0.5, warm-up excluded",
                 "p50 0.900 · p90 1.800 · p95 2.250 · p99 4.500 · p99.9 9.750 · max 31.000 ms",
                 "client1 (10.200.0.12) — lab2", "pgbench (PostgreSQL) 15.20 on client1"]:  # fmt: skip
        assert text in page, text
    assert "no per-transaction log for this run" in other


def test_a_failed_run_shows_the_step_command_exit_status_and_output(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(
        host, make_device(host), make_pg_install(host), state=RunState.FAILED, failed_step="preparing_storage",
        failed_command="mount -t xfs -o nobarrier /dev/loop3 /mnt/x", failed_exit_status=32,
        failed_output="xfs: Unknown parameter 'nobarrier'", error="mount failed",
    )  # fmt: skip

    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()

    assert "Failed while preparing storage" in page
    assert "mount -t xfs -o nobarrier /dev/loop3 /mnt/x" in page and "exit status 32" in page
    assert "xfs: Unknown parameter &#x27;nobarrier&#x27;" in page


async def read_events(client: AsyncClient, url: str, **headers: str) -> list[tuple[str, str, dict[str, object]]]:
    response = await client.get(url, headers=headers)
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    text = ""
    async for chunk in response.streaming_content:  # type: ignore[attr-defined]
        text += chunk.decode() if isinstance(chunk, bytes) else chunk
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "id" in fields:
            events.append((fields["id"], fields["event"], json.loads(fields["data"])))
    return events


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_event_stream_replays_everything_and_resumes_after_the_last_id(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)
    live.reset_run_stream(run.pk)
    for second in range(1, 6):
        live.publish(run.pk, "sample", {"second": second, "tps": 100.0 * second, "latency_ms": 1.0, "warmup": False})
    live.publish(run.pk, "state", {"state": "done", "label": "done", "at": "2026-11-22T00:00:00"})
    client = AsyncClient()
    client.force_login(client_for.users["vera"])
    url = reverse("run-events", args=[run.pk])

    everything = asyncio.run(read_events(client, url))
    resumed = asyncio.run(read_events(client, url, **{"Last-Event-ID": everything[2][0]}))

    assert [data.get("second") for _, kind, data in everything if kind == "sample"] == [1, 2, 3, 4, 5]
    assert everything[-1][1] == "state"
    assert [data.get("second") for _, kind, data in resumed if kind == "sample"] == [4, 5]


@pytest.mark.parametrize(
    ("client_fields", "with_install", "error"),
    [
        ({"address": "10.0.0.7"}, True, None),
        ({"address": ""}, True, "client1 has no address the server could let in (pg_hba)."),
        ({"address": "samenet"}, True, "bad client address 'samenet'"),
        (
            {"address": "127.0.0.1"},
            True,
            "client1 is this machine, not an address on the lab network: a client host and "
            "its server must reach each other over the network.",
        ),
        (
            {"address": "", "transport": "local"},
            True,
            "client1 is this machine, not an address on the lab network: "
            "a client host and its server must reach each other over the network.",
        ),
        ({"address": "10.0.0.7"}, False, "client1 has no PostgreSQL install, so no pgbench, in the inventory."),
    ],
    ids=["accepted", "no-address", "hba-keyword", "loopback", "local-transport", "no-pgbench"],
)
def test_a_client_host_needs_an_address_and_a_pgbench(
    otto: Client, client_fields: dict[str, str], with_install: bool, error: str | None
) -> None:
    data = form_data()
    client_host = make_host(name="client1", **({"transport": Host.Transport.SSH} | client_fields))
    if with_install:
        make_pg_install(client_host)

    response = otto.post(reverse("run-new"), data | {"client_hosts": [client_host.pk]})

    if error is None:
        assert response.status_code == 302
        assert Run.objects.get().client_host_list == [client_host]
    else:
        assert response.context["form"].errors["client_hosts"] == [error]
        assert not Run.objects.exists()


def test_the_server_itself_is_not_a_client_host(otto: Client) -> None:
    data = form_data()

    errors = otto.post(reverse("run-new"), data | {"client_hosts": [data["server_host"]]}).context["form"].errors

    assert errors["client_hosts"] == ["lab1 is the run's server: leave it out to run pgbench on the server itself."]


@pytest.mark.parametrize("shared", [False, True])
def test_two_client_hosts_are_queued_in_order_with_their_databases(
    otto: Client, client_for: ClientFactory, shared: bool
) -> None:
    data = form_data()
    lab2, lab3 = (make_host(name=name, address=f"10.200.0.{n}") for name, n in (("lab2", 12), ("lab3", 13)))
    for host in (lab2, lab3):
        make_pg_install(host)

    response = otto.post(reverse("run-new"), data | {"client_hosts": [lab3.pk, lab2.pk], "shared_database": shared})

    assert response.status_code == 302
    run = Run.objects.get()
    rows = list(run.run_clients.values_list("host__name", "position", "database"))
    databases = ["bench", "bench"] if shared else ["bench_1", "bench_2"]
    assert rows == [("lab3", 1, databases[0]), ("lab2", 2, databases[1])]
    assert run.shared_database is shared
    page = client_for("vera").get(reverse("run-detail", args=[run.pk])).content.decode()
    page = re.sub(r'<a href="/hosts/\d+/">([^<]*)</a>', r"\1", page)  # hosts link to their pages
    assert "pgbench on lab3, lab2 over TCP" in page
    assert f"lab3, lab2, over TCP ({'one database' if shared else 'own databases'})" in page
    again = otto.get(reverse("run-new"), {"again": run.pk}).context["form"]
    assert (again.initial["client_hosts"], again.initial["shared_database"]) == ([lab3.pk, lab2.pk], shared)


def test_one_client_host_runs_against_the_one_database_even_if_shared_is_ticked(otto: Client) -> None:
    data = form_data()
    lab2 = make_host(name="lab2", address="10.200.0.12")
    make_pg_install(lab2)

    assert otto.post(reverse("run-new"), data | {"client_hosts": [lab2.pk], "shared_database": True}).status_code == 302

    run = Run.objects.get()
    assert run.shared_database is False
    assert list(run.run_clients.values_list("position", "database")) == [(1, "bench")]


async def first_state_event(client: AsyncClient, url: str) -> dict[str, object]:
    response = await client.get(url)
    text = ""
    async for chunk in response.streaming_content:  # type: ignore[attr-defined]
        text += chunk.decode() if isinstance(chunk, bytes) else chunk
        for block in text.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if fields.get("event") == "state":
                return dict(json.loads(fields["data"]))
    raise AssertionError("the stream ended without a state event")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_run_list_gets_states_that_change_between_render_and_connect(client_for: ClientFactory) -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)
    live.publish(run.pk, "state", {"state": "queued", "label": "queued", "at": "2026-11-22T00:00:00"})
    page = client_for("vera").get(reverse("runs")).content.decode()
    events_url = page.split('data-events="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    # The run moves on after the page was rendered, before the browser connects.
    live.publish(run.pk, "state", {"state": "preparing_storage", "label": "preparing storage", "at": "x"})
    client = AsyncClient()
    client.force_login(client_for.users["vera"])

    event = asyncio.run(asyncio.wait_for(first_state_event(client, events_url), timeout=10))

    assert (event["run"], event["state"]) == (run.pk, "preparing_storage")


def test_a_finished_runs_stream_expires_and_progress_lines_are_not_sent_twice() -> None:
    host = make_host()
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.MEASURING)
    live.reset_run_stream(run.pk)
    observer = RunObserver(run)

    observer.line("pgbench", "progress: 1.0 s, 2784.9 tps, lat 1.416 ms stddev 0.543, 0 failed")
    observer.line("pgbench", "pgbench: warning: something worth reading")
    live.publish(run.pk, "state", {"state": "done", "label": "done", "at": "x"})

    events = live.events_after(live.run_stream(run.pk))
    assert [e.data.get("line") for e in events if e.kind == "log"] == ["pgbench: warning: something worth reading"]
    assert len(observer.log_tail) == 2  # both kept for a failure's output
    assert 0 < live.client().ttl(live.run_stream(run.pk)) <= live.FINISHED_RUN_STREAM_TTL_S


@pytest.mark.parametrize(
    ("clients", "message"),
    [
        (lambda server, lab2: [lab2.pk, lab2.pk], "name a host twice"),
        (lambda server, lab2: [lab2.pk, server.pk], "is the run's server"),
        (lambda server, lab2: [lab2.pk, lab2.pk + 1000], "no host"),
    ],
    ids=["repeated", "the-server", "unknown"],
)
def test_enqueueing_bad_client_hosts_writes_nothing_not_even_the_runs_before(
    clients: Callable[[Host, Host], list[int]], message: str
) -> None:
    server = make_host(name="lab1")
    device, pg = make_device(server), make_pg_install(server)
    lab2 = make_host(name="lab2", address="10.200.0.12")

    def new_run() -> Run:
        return Run(server_host=server, device=device, pg_install=pg, scale=1, clients=2, threads=1, duration_s=5)

    with pytest.raises(ValueError, match=message):
        runs_enqueue(runs=[new_run(), new_run()], client_host_ids=[[lab2.pk], clients(server, lab2)])

    assert (Run.objects.count(), RunClient.objects.count(), RunTransition.objects.count()) == (0, 0, 0)


def test_run_again_keeps_a_client_host_disabled_since_ticked_and_marked(otto: Client) -> None:
    server = make_host(name="lab1")
    lab2 = make_host(name="lab2", address="10.200.0.12")
    run = make_run(server, make_device(server, wipe_allowed=True), make_pg_install(server), client_hosts=[lab2])
    Host.objects.filter(pk=lab2.pk).update(enabled=False)

    page = otto.get(reverse("run-new"), {"again": run.pk}).content.decode()

    (box,) = re.findall(
        rf'<label for="id_client_hosts_\d+">(<input [^>]*value="{lab2.pk}"[^>]*>) lab2 \(disabled\)</label>', page
    )
    assert " checked" in box


def test_only_a_run_named_with_ascii_digits_is_linked() -> None:
    link = reverse("run-detail", args=[19])
    assert link_runs("lab2 busy with run 19") == f'lab2 busy with <a href="{link}">run 19</a>'
    assert link_runs("lab2 busy with run \u0661\u0669") == "lab2 busy with run \u0661\u0669"  # not run 19
