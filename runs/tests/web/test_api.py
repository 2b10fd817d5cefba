"""The JSON API: token authentication, the same validation and permissions as the pages."""

import pytest
from django.contrib.auth.models import User
from knox.models import AuthToken
from rest_framework.test import APIClient, APIRequestFactory

from runs.api.permissions import RolePermission
from runs.models import Run, RunSample, RunState
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

pytestmark = pytest.mark.django_db


def api_client(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user)[1]}")
    return client


def run_body(**changes: object) -> dict[str, object]:
    host = make_host(name="lab1")
    device = make_device(host, wipe_allowed=True, capacity_bytes=2**30)
    pg = make_pg_install(host)
    body: dict[str, object] = {"server_host": host.pk, "device": device.pk, "pg_install": pg.pk, "filesystem": "xfs",
                               "mount_options": "noatime", "scale": 2, "clients": 4, "threads": 2, "duration_s": 20,
                               "warmup_s": 0, "workload": "select-only", "query_mode": "prepared"}  # fmt: skip
    return body | changes


def test_a_token_reads_the_inventory_without_a_session() -> None:
    host = make_host()
    make_device(host)
    client = api_client(make_user("vera", "viewer"))

    hosts = client.get("/api/hosts/").json()
    devices = client.get("/api/devices/", {"host": host.pk}).json()

    assert [h["name"] for h in hosts["results"]] == ["lab1"]
    assert devices["results"][0]["path"] == "/dev/disk/by-id/ata-TEST_SSD_1"


def test_without_a_token_the_api_answers_401_not_a_login_page() -> None:
    response = APIClient().get("/api/runs/")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"


def test_an_operator_queues_a_run_through_the_api() -> None:
    response = api_client(make_user("otto", "operator")).post("/api/runs/", run_body(), format="json")

    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.state == RunState.QUEUED and run.queued_by is not None and run.queued_by.username == "otto"
    assert (run.filesystem, run.workload, run.query_mode) == ("xfs", "select-only", "prepared")
    assert run.log_sampling_rate == 1.0  # left out: the model's default, as the form shows it


def client_hosts(*names: str) -> list[int]:
    hosts = [make_host(name=name, address=f"10.200.0.{20 + n}") for n, name in enumerate(names)]
    for host in hosts:
        make_pg_install(host)
    return [host.pk for host in hosts]


def test_a_run_is_queued_with_client_hosts_in_their_order_and_read_back() -> None:
    client = api_client(make_user("otto", "operator"))
    lab3, lab2 = client_hosts("lab3", "lab2")

    response = client.post("/api/runs/", run_body(client_hosts=[lab3, lab2], shared_database=True), format="json")

    assert response.status_code == 201, response.json()
    created = response.json()
    assert (created["client_hosts"], created["client_host_names"], created["shared_database"]) == (
        [lab3, lab2], ["lab3", "lab2"], True
    )  # fmt: skip
    run = Run.objects.get(pk=created["id"])
    assert list(run.run_clients.values_list("host_id", "position", "database")) == [
        (lab3, 1, "bench"), (lab2, 2, "bench")
    ]  # fmt: skip
    listed = client.get("/api/runs/").json()["results"][0]
    detail = client.get(f"/api/runs/{run.pk}/").json()
    for shown in (listed, detail):
        assert (shown["client_hosts"], shown["client_host_names"]) == ([lab3, lab2], ["lab3", "lab2"])
        assert "client_host" not in shown  # the deprecated input is not an output


def test_the_deprecated_single_client_host_is_still_read() -> None:
    client = api_client(make_user("otto", "operator"))
    (lab2,) = client_hosts("lab2")

    body = run_body()
    one = client.post("/api/runs/", body | {"client_host": lab2}, format="json")
    none = client.post("/api/runs/", body | {"client_host": None}, format="json")
    both = client.post("/api/runs/", body | {"client_host": lab2, "client_hosts": [lab2]}, format="json")

    assert one.status_code == 201, one.json()
    assert Run.objects.get(pk=one.json()["id"]).client_host_list[0].pk == lab2
    assert none.status_code == 201, none.json()
    assert none.json()["client_hosts"] == []
    assert both.status_code == 400
    assert both.json() == {"client_host": ["Give client_hosts (a list of ids), not both."]}


def test_the_api_refuses_bad_client_hosts_and_queues_nothing() -> None:
    client = api_client(make_user("otto", "operator"))
    (lab2,) = client_hosts("lab2")
    body = run_body()

    twice = client.post("/api/runs/", body | {"client_hosts": [lab2, lab2]}, format="json")
    server = client.post("/api/runs/", body | {"client_hosts": [body["server_host"]]}, format="json")
    junk = client.post("/api/runs/", body | {"client_hosts": ["lab2"]}, format="json")

    assert twice.json() == {"client_hosts": ["lab2 is named twice: name each client host once."]}
    assert server.json() == {
        "client_hosts": ["lab1 is the run's server: leave it out to run pgbench on the server itself."]
    }
    assert junk.status_code == 400 and "client_hosts" in junk.json()
    assert not Run.objects.exists()


def test_fields_left_out_take_their_defaults_and_null_turns_the_transaction_log_off() -> None:
    client = api_client(make_user("otto", "operator"))
    body = run_body()
    for name in ("scale", "clients", "threads", "query_mode", "workload", "warmup_s"):
        del body[name]

    response = client.post("/api/runs/", body | {"log_sampling_rate": None}, format="json")

    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    blank = Run()
    defaults = {name: getattr(blank, name) for name in ("scale", "clients", "threads", "warmup_s")}
    assert {name: getattr(run, name) for name in defaults} == defaults
    assert run.log_sampling_rate is None


def test_the_api_refuses_what_the_form_refuses_with_the_same_words() -> None:
    client = api_client(make_user("otto", "operator"))

    response = client.post("/api/runs/", run_body(threads=8, mount_options="nodatacow"), format="json")

    assert response.status_code == 400
    assert response.json()["threads"] == ["threads cannot exceed clients"]
    assert "not allowed for xfs" in response.json()["mount_options"][0]
    assert not Run.objects.exists()


def test_a_viewer_may_not_queue_or_cancel() -> None:
    client = api_client(make_user("vera", "viewer"))
    host = make_host(name="lab9", address="10.0.0.9")
    run = make_run(host, make_device(host), make_pg_install(host), state=RunState.QUEUED)

    assert client.post("/api/runs/", run_body(), format="json").status_code == 403
    assert client.post(f"/api/runs/{run.pk}/cancel/").status_code == 403


@pytest.mark.parametrize(
    ("url", "said"),
    [
        # The run list page's words (runs.bench.filters), field by field.
        ("/api/runs/?host=lab1", {"host": ["must be the id of a host, a whole number; pick one from the list"]}),
        ("/api/runs/?device=1.5", {"device": ["must be the id of a device, a whole number; pick one from the list"]}),
        ("/api/devices/?host=x", {"host": ["must be the id of a host, a whole number; pick one from the list"]}),
    ],
)
def test_a_filter_that_is_not_an_id_is_the_callers_mistake(url: str, said: dict[str, list[str]]) -> None:
    response = api_client(make_user("vera", "viewer")).get(url)

    assert response.status_code == 400
    assert response.json() == said


def test_runs_are_listed_with_filters_and_cancelled_and_their_samples_read() -> None:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    otto = make_user("otto", "operator")
    done = make_run(host, device, pg, state=RunState.DONE, tps=812.5, filesystem="btrfs")
    queued = make_run(host, device, pg, state=RunState.QUEUED, queued_by=otto)
    RunSample.objects.bulk_create([RunSample(run=done, second=s, tps=800 + s, latency_ms=2.0) for s in (1, 2, 3)])
    client = api_client(otto)

    finished = client.get("/api/runs/", {"state": "done"}).json()["results"]
    on_btrfs = client.get("/api/runs/", {"filesystem": "btrfs", "host": host.pk}).json()["results"]
    detail = client.get(f"/api/runs/{done.pk}/").json()
    samples = client.get(f"/api/runs/{done.pk}/samples/").json()
    cancelled = client.post(f"/api/runs/{queued.pk}/cancel/").json()

    assert [r["id"] for r in finished] == [done.pk] and [r["id"] for r in on_btrfs] == [done.pk]
    assert detail["tps"] == 812.5 and "environment" in detail and "summary" in detail
    assert [s["second"] for s in samples] == [1, 2, 3] and samples[0]["tps"] == 801
    assert cancelled["state"] == "cancelled"


def test_an_action_that_writes_without_naming_its_permission_is_refused_to_everyone() -> None:
    """A future POST action that forgot `required_permission` must be closed, not open to viewers."""
    ada = make_user("ada", "admin")
    view = type("View", (), {"action": "archive", "required_permission": {"create": "runs.queue_run"}})()
    post, get = APIRequestFactory().post("/api/x/"), APIRequestFactory().get("/api/x/")
    post.user = get.user = ada

    assert not RolePermission().has_permission(post, view)
    assert RolePermission().has_permission(get, view)  # a read needs only the viewer role
