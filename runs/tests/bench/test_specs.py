"""A run specification is a value (varied one field at a time, compared field by field, stored as
JSON), and spec_errors is the one validation path: the queue form and the API say what it says."""

import dataclasses
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection, models
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.specs import FIELD_LABELS, FORM_FIELDS, SPEC_FIELDS, RunSpec
from runs.forms.runs import RUN_FIELDS, RunForm, run_form_initial
from runs.models import Device, Host, PgInstall, Run, RunClient
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user

SPEC = RunSpec(server_host_id=1, device_id=2, filesystem="xfs", pg_install_id=3)


# --- the value ------------------------------------------------------------------------------------


def test_a_spec_varies_one_field_at_a_time_and_says_which_fields_differ() -> None:
    more_clients = SPEC.replace(clients=16)

    assert (SPEC.clients, more_clients.clients) == (4, 16)
    assert SPEC.differences(more_clients) == ("clients",)
    assert SPEC.differences(SPEC.replace(threads=1, device_id=7, clients=4)) == ("device_id", "threads")
    assert SPEC.differences(SPEC) == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        SPEC.clients = 8  # type: ignore[misc]


def test_a_spec_survives_a_trip_through_json() -> None:
    spec = SPEC.replace(
        rate_limit_tps=250.0, log_sampling_rate=None, client_host_ids=(9, 4), pg_settings="work_mem = 8MB"
    )

    assert RunSpec.from_json(json.loads(json.dumps(spec.as_json()))) == spec
    assert RunSpec.from_json({"server_host_id": 1, "device_id": 2, "filesystem": "xfs", "pg_install_id": 3}) == SPEC


def test_a_spec_stored_with_one_client_host_reads_as_a_list_of_one() -> None:
    stored = {name: value for name, value in SPEC.as_json().items() if name != "client_host_ids"}

    assert RunSpec.from_json(stored | {"client_host_id": 7}).client_host_ids == (7,)
    assert RunSpec.from_json(stored | {"client_host_id": None}) == SPEC
    with pytest.raises(ValueError, match=r"^client_host_id must be a whole number or null, not 1\.5"):
        RunSpec.from_json(stored | {"client_host_id": 1.5})
    with pytest.raises(ValueError, match=r"^give client_host_ids \(a list of host ids\), not client_host_id too"):
        RunSpec.from_json(stored | {"client_host_id": 7, "client_host_ids": [7]})


def test_one_database_for_all_only_means_something_with_two_client_hosts() -> None:
    assert SPEC.replace(shared_database=True).shared_database is False
    assert SPEC.replace(client_host_ids=(5,), shared_database=True) == SPEC.replace(client_host_ids=(5,))
    assert SPEC.replace(client_host_ids=[5, 6], shared_database=True).as_json() | {} == SPEC.as_json() | {
        "client_host_ids": [5, 6],
        "shared_database": True,
    }
    assert SPEC.replace(client_host_ids=[5, 6]).client_host_ids == (5, 6)  # a tuple, hashable, in order
    assert SPEC.replace(client_host_ids=(5, 6)) != SPEC.replace(client_host_ids=(6, 5))


def test_a_whole_number_is_a_number_for_a_rate() -> None:
    assert RunSpec.from_json(SPEC.as_json() | {"rate_limit_tps": 100}).rate_limit_tps == 100.0


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"colour": "blue"}, "unknown field colour"),
        ({"clients": "4"}, "clients must be a whole number, not '4'"),
        ({"clients": 4.0}, "clients must be a whole number, not 4.0"),
        ({"clients": True}, "clients must be a whole number, not True"),
        ({"scale": None}, "scale must be a whole number, not None"),
        ({"rate_limit_tps": "fast"}, "rate_limit_tps must be a number or null, not 'fast'"),
        ({"client_host_ids": [1.5]}, "client_host_ids must be a list of host ids (whole numbers), not [1.5]"),
        ({"client_host_ids": 3}, "client_host_ids must be a list of host ids (whole numbers), not 3"),
        ({"shared_database": 1}, "shared_database must be true or false, not 1"),
        ({"filesystem": ["xfs"]}, "filesystem must be a string, not ['xfs']"),
    ],
)
def test_json_with_an_unknown_field_or_a_wrong_type_is_refused_naming_the_field(
    changes: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(named)):
        RunSpec.from_json(SPEC.as_json() | changes)


def test_json_without_a_field_that_has_no_default_or_not_an_object_is_refused() -> None:
    without_device = {name: value for name, value in SPEC.as_json().items() if name != "device_id"}

    with pytest.raises(ValueError, match=r"^device_id is missing"):
        RunSpec.from_json(without_device)
    with pytest.raises(ValueError, match="a run specification is a JSON object, not list"):
        RunSpec.from_json([SPEC.as_json()])


def test_the_spec_s_defaults_are_the_run_model_s() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(RunSpec) if f.default is not dataclasses.MISSING}
    model_fields = {name: Run._meta.get_field(FORM_FIELDS[name]) for name in defaults if name != "client_host_ids"}
    model_defaults = {name: f.get_default() for name, f in model_fields.items() if isinstance(f, models.Field)}

    # No client hosts: the run has no RunClient rows; no parameters: the run's {} as the spec's sorted pairs.
    assert defaults == model_defaults | {"client_host_ids": (), "workload_params": ()}
    assert model_defaults["workload_params"] == {}
    assert set(SPEC_FIELDS) - set(defaults) == {"server_host_id", "device_id", "filesystem", "pg_install_id"}


def test_the_spec_s_fields_are_the_form_s_with_the_model_s_labels() -> None:
    assert sorted(FORM_FIELDS.values()) == sorted(RUN_FIELDS)
    assert FIELD_LABELS["device_id"] == "device"
    assert FIELD_LABELS["server_host_id"] == "server host"
    assert FIELD_LABELS["mount_options"] == "mount options"
    assert FIELD_LABELS["pg_settings"] == "PostgreSQL settings"
    assert FIELD_LABELS["duration_s"] == "duration (s)"


# --- inventory rows ---------------------------------------------------------------------------


@pytest.fixture
def lab1(db: None) -> Host:
    host = make_host()
    make_device(host, wipe_allowed=True, capacity_bytes=2**30)
    make_device(host, name="dir0", kind=Device.Kind.VIRTUAL, path="/srv/benchlab-runs")
    make_pg_install(host)
    return host


def spec_on(host: Host, **changes: Any) -> RunSpec:
    """A valid spec for an ext4 run on host's wipeable disk, changed by `changes`."""
    device = host.devices.get(name="ssd0")
    spec = RunSpec(host.pk, device.pk, "ext4", host.pg_installs.get().pk, mount_options="noatime", scale=2)
    return spec.replace(**changes)


def other_host(name: str = "lab2", **fields: Any) -> Host:
    host = make_host(**{"name": name, "address": f"10.200.0.{20 + Host.objects.count()}"} | fields)
    make_pg_install(host)
    return host


def errors_of(spec: RunSpec) -> dict[str, list[str]]:
    return spec_errors(spec, Inventory.load())


def test_a_run_stored_from_a_spec_gives_the_spec_back(lab1: Host) -> None:
    spec = spec_on(lab1, workload="select-only", rate_limit_tps=50.0, log_sampling_rate=None)

    run = Run.objects.create(**spec.run_fields())

    assert RunSpec.from_run(Run.objects.get(pk=run.pk)) == spec
    assert run_form_initial(run) == {FORM_FIELDS[name]: value for name, value in spec.as_json().items()}


def test_a_valid_spec_has_no_errors(lab1: Host) -> None:
    client = other_host("client1", serves_postgres=False)

    assert errors_of(spec_on(lab1)) == {}
    assert errors_of(spec_on(lab1, client_host_ids=(client.pk,), workload="custom", custom_script="SELECT 1;")) == {}
    directory = lab1.devices.get(name="dir0").pk
    assert errors_of(spec_on(lab1, filesystem="directory", mount_options="", device_id=directory)) == {}


def unknown_id(model: type[Host | Device | PgInstall]) -> int:
    return (model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"filesystem": "tmpfs", "mkfs_options": "-b 4096"}, {"mkfs_options": ["tmpfs takes no mkfs options"]}),
        ({"clients": 0}, {"clients": ["clients must be between 1 and 10000; got 0."]}),
        ({"clients": 2, "threads": 3}, {"threads": ["threads cannot exceed clients"]}),
        ({"scale": 100_001}, {"scale": ["scale must be between 1 and 100000; got 100001."]}),
        ({"filesystem": "zfs"}, {"filesystem": ["Value 'zfs' is not a valid choice."]}),
        ({"filesystem": "xfs", "mount_options": "data=writeback"}, {"mount_options": [
            "mount option 'data' is not allowed for xfs"]}),
        ({"pg_settings": "shared_buffers = lots"}, {"pg_settings": [
            "setting line 1: shared_buffers must be a size such as 128MB or 16384 (8kB pages) (got 'lots')"]}),
        ({"workload": "custom"}, {"custom_script": ["A custom workload needs its script."]}),
        ({"rate_limit_tps": float("inf")}, {"rate_limit_tps": ["inf is not a number: give a finite one."]}),
        ({"log_sampling_rate": 2.0}, {"log_sampling_rate": [
            "transaction log sampling must be between 0.0001 and 1; got 2."]}),
    ],
    ids=["tmpfs-mkfs", "no-clients", "threads>clients", "scale", "filesystem", "mount", "setting", "no-script",
         "inf-rate", "sampling>1"],
)  # fmt: skip
def test_each_problem_lands_on_its_field_saying_what_is_allowed(
    lab1: Host, changes: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    assert errors_of(spec_on(lab1, **changes)) == expected


def test_rows_that_do_not_exist_are_named(lab1: Host) -> None:
    device, install, host = unknown_id(Device), unknown_id(PgInstall), unknown_id(Host)

    errors = errors_of(spec_on(lab1, device_id=device, pg_install_id=install, client_host_ids=(host,)))

    assert errors == {
        "device": [f"device {device} does not exist in the inventory."],
        "pg_install": [f"PostgreSQL install {install} does not exist in the inventory."],
        "client_hosts": [f"host {host} does not exist in the inventory."],
    }


def test_several_client_hosts_each_own_database_or_one_for_all(lab1: Host) -> None:
    lab2, lab3 = other_host("lab2"), other_host("lab3")

    assert errors_of(spec_on(lab1, client_host_ids=(lab2.pk, lab3.pk))) == {}
    assert errors_of(spec_on(lab1, client_host_ids=(lab3.pk, lab2.pk), shared_database=True)) == {}


def client_problem(lab1: Host, name: str) -> tuple[RunSpec, list[str]]:
    """A spec with two client hosts, the second one wrong as `name` says, and the one message expected."""
    lab2 = other_host("lab2")
    if name == "repeated":
        return spec_on(lab1, client_host_ids=(lab2.pk, lab2.pk)), ["lab2 is named twice: name each client host once."]
    if name == "too-many":
        ids = tuple(other_host(f"c{i}").pk for i in range(9))
        return spec_on(lab1, client_host_ids=ids), ["A run may have at most 8 client hosts; 9 are named."]
    if name == "the-server":
        return spec_on(lab1, client_host_ids=(lab2.pk, lab1.pk)), [
            "lab1 is the run's server: leave it out to run pgbench on the server itself."
        ]
    if name == "no-pgbench":
        bare = make_host(name="bare", address="10.200.0.90")
        return spec_on(lab1, client_host_ids=(lab2.pk, bare.pk)), [
            "bare has no PostgreSQL install, so no pgbench, in the inventory."
        ]
    if name == "removed-pgbench":
        gone = other_host("gone")
        gone.pg_installs.update(removed_at=timezone.now())
        return spec_on(lab1, client_host_ids=(lab2.pk, gone.pk)), [
            "gone has no PostgreSQL install, so no pgbench, in the inventory."
        ]
    assert name == "no-address"
    nowhere = other_host("nowhere", address="")
    return spec_on(lab1, client_host_ids=(lab2.pk, nowhere.pk)), [
        "nowhere has no address the server could let in (pg_hba)."
    ]


CLIENT_PROBLEMS = ("repeated", "too-many", "the-server", "no-pgbench", "removed-pgbench", "no-address")


@pytest.mark.parametrize("name", CLIENT_PROBLEMS)
def test_each_client_host_problem_is_one_message_naming_the_host(lab1: Host, name: str) -> None:
    spec, expected = client_problem(lab1, name)

    assert errors_of(spec) == {"client_hosts": expected}


@pytest.mark.parametrize("name", CLIENT_PROBLEMS)
def test_the_queue_page_refuses_a_client_host_problem_and_creates_nothing(lab1: Host, name: str) -> None:
    spec, expected = client_problem(lab1, name)
    page = Client()
    page.force_login(make_user("otto", "operator"))

    response = page.post(reverse("run-new"), form_data(spec))

    assert response.status_code == 400
    assert response.context["form"].errors == {"client_hosts": expected}
    assert (Run.objects.count(), RunClient.objects.count()) == (0, 0)


def test_devices_and_installs_must_be_the_server_s(lab1: Host) -> None:
    lab2 = other_host()
    elsewhere = make_device(lab2, wipe_allowed=True)

    errors = errors_of(spec_on(lab1, device_id=elsewhere.pk, pg_install_id=lab2.pg_installs.get().pk))

    assert errors == {
        "device": ["lab2:ssd0 is not a device of lab1."],
        "pg_install": ["PostgreSQL 15.19 (8 kB pages) on lab2 is not installed on lab1."],
    }


def test_an_install_whose_build_was_removed_runs_nothing_new(lab1: Host) -> None:
    install = lab1.pg_installs.get()
    PgInstall.objects.filter(pk=install.pk).update(removed_at=timezone.now())

    assert errors_of(spec_on(lab1)) == {
        "pg_install": [f"{install} was removed from its host with its build: choose another install."]
    }


def test_an_install_the_probe_found_gone_is_refused_on_the_queue_page_naming_the_re_probe(lab1: Host) -> None:
    install = lab1.pg_installs.get()
    gone_at = datetime(2026, 11, 26, 23, 40, tzinfo=UTC)
    PgInstall.objects.filter(pk=install.pk).update(missing_since=gone_at)
    page = Client()
    page.force_login(make_user("otto", "operator"))

    shown = page.get(reverse("run-new")).content.decode()
    response = page.post(reverse("run-new"), form_data(spec_on(lab1)))

    assert f"{install} (missing from lab1 since 2026-11-26 23:40 UTC)</option>" in shown
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "pg_install": [
            f"{install} ({install.bin_dir}) is missing from lab1 since 2026-11-26 23:40 UTC: the probe found none "
            "of its programs there. Choose another install; once it is back, re-probe lab1 (admin: Hosts, select "
            "it, action “Probe now”; or `manage.py probe_host lab1`)."
        ]
    }
    assert Run.objects.count() == 0


def test_the_api_shows_since_when_an_install_is_missing_and_refuses_a_run_on_it(lab1: Host) -> None:
    install = lab1.pg_installs.get()
    PgInstall.objects.filter(pk=install.pk).update(missing_since=datetime(2026, 11, 26, 23, 40, tzinfo=UTC))
    api = APIClient()
    api.force_authenticate(make_user("otto", "operator"))

    shown = api.get(f"/api/pg-installs/{install.pk}/").json()
    refused = api.post("/api/runs/", {FORM_FIELDS[n]: v for n, v in spec_on(lab1).as_json().items()}, format="json")

    assert shown["missing_since"] == "2026-11-26T23:40:00Z"
    assert refused.status_code == 400 and "re-probe lab1" in refused.json()["pg_install"][0]
    assert Run.objects.count() == 0


def test_a_client_host_s_missing_install_gives_it_no_pgbench(lab1: Host) -> None:
    lab2 = other_host("lab2")
    lab2.pg_installs.update(missing_since=timezone.now())

    install = lab2.pg_installs.get()

    assert errors_of(spec_on(lab1, client_host_ids=(lab2.pk,))) == {
        "client_hosts": [f"lab2 has no PostgreSQL install, so no pgbench: {install.missing_refusal()}"]
    }
    assert "re-probe lab2" in install.missing_refusal()


def test_the_device_must_suit_the_filesystem_and_allow_wiping(lab1: Host) -> None:
    directory = lab1.devices.get(name="dir0").pk
    Device.objects.filter(name="ssd0").update(wipe_allowed=False)

    assert errors_of(spec_on(lab1, device_id=directory)) == {
        "filesystem": ["lab1:dir0 is a directory: choose directory or tmpfs."],
        "device": ["lab1:dir0 is not marked wipeable in the inventory."],
    }
    assert errors_of(spec_on(lab1, filesystem="directory", mount_options="")) == {
        "filesystem": ["lab1:ssd0 is a block device: choose a filesystem to create."]
    }
    assert errors_of(spec_on(lab1)) == {"device": ["lab1:ssd0 is not marked wipeable in the inventory."]}
    assert errors_of(spec_on(lab1, filesystem="tmpfs", mount_options="size=1G")) == {}


def test_hosts_that_take_no_runs_in_their_role_are_refused_saying_why(lab1: Host) -> None:
    no_clients = other_host("lab2", runs_clients=False)
    disabled_client = other_host("lab3", enabled=False)

    assert errors_of(spec_on(lab1, client_host_ids=(no_clients.pk,))) == {
        "client_hosts": ["lab2 does not run pgbench clients in the inventory: choose hosts that do, or none."]
    }
    assert errors_of(spec_on(lab1, client_host_ids=(disabled_client.pk,))) == {
        "client_hosts": ["lab3 is disabled in the inventory: it takes no new runs."]
    }
    assert errors_of(spec_on(lab1, client_host_ids=(lab1.pk,))) == {
        "client_hosts": ["lab1 is the run's server: leave it out to run pgbench on the server itself."]
    }
    Host.objects.filter(pk=lab1.pk).update(serves_postgres=False)
    assert errors_of(spec_on(lab1)) == {
        "server_host": ["lab1 does not serve PostgreSQL in the inventory: choose one that does."]
    }
    Host.objects.filter(pk=lab1.pk).update(enabled=False)
    assert errors_of(spec_on(lab1)) == {"server_host": ["lab1 is disabled in the inventory: it takes no new runs."]}


def test_a_hundred_specs_are_validated_with_four_queries(lab1: Host) -> None:
    client = other_host("client1")
    specs = [spec_on(lab1, clients=clients, threads=1, client_host_ids=(client.pk,)) for clients in range(1, 101)]

    with CaptureQueriesContext(connection) as queries:
        inventory = Inventory.load()
        errors = [spec_errors(spec, inventory) for spec in specs]

    assert errors == [{}] * 100
    assert len(queries) == 4  # hosts, their installs (a client's pgbench), devices, installs


# --- the form and the API say what spec_errors says --------------------------------------------


def form_data(spec: RunSpec) -> dict[str, object]:
    return {FORM_FIELDS[name]: "" if value is None else value for name, value in spec.as_json().items()}


def disabled_server(host: Host) -> RunSpec:
    Host.objects.filter(pk=host.pk).update(enabled=False)
    return spec_on(host)


FORM_CASES: dict[str, Callable[[Host], RunSpec]] = {
    "tmpfs-mkfs": lambda host: spec_on(host, filesystem="tmpfs", mkfs_options="-b 4096"),
    "no-clients": lambda host: spec_on(host, clients=0),
    "threads>clients": lambda host: spec_on(host, clients=2, threads=3),
    "scale-and-setting": lambda host: spec_on(host, scale=100_001, pg_settings="fsync = maybe"),
    "mount": lambda host: spec_on(host, filesystem="xfs", mount_options="data=writeback"),
    "shell-script": lambda host: spec_on(host, workload="custom", custom_script="\\shell id"),
    "sampling>1": lambda host: spec_on(host, log_sampling_rate=2.0),
    "disabled-server": disabled_server,
    "device-elsewhere": lambda host: spec_on(host, device_id=make_device(other_host(), wipe_allowed=True).pk),
    "not-wipeable": lambda host: spec_on(host, device_id=host.devices.get(name="dir0").pk),
}


@pytest.mark.parametrize("case", FORM_CASES)
def test_the_queue_form_refuses_what_spec_errors_refuses_with_the_same_words(lab1: Host, case: str) -> None:
    spec = FORM_CASES[case](lab1)

    form = RunForm(form_data(spec))

    assert not form.is_valid()
    assert form.errors == errors_of(spec) != {}


def test_the_form_s_own_parsing_comes_first_and_the_rest_is_still_checked(lab1: Host) -> None:
    spec = spec_on(lab1, pg_settings="fsync = maybe")

    form = RunForm(form_data(spec) | {"clients": "many", "device": unknown_id(Device)})

    assert not form.is_valid()
    assert form.errors["clients"] == ["Enter a whole number."]
    assert form.errors["device"] == ["Select a valid choice. That choice is not one of the available choices."]
    assert form.errors["pg_settings"] == errors_of(spec)["pg_settings"]
    assert set(form.errors) == {"clients", "device", "pg_settings"}


def test_the_api_refuses_a_disabled_server_saying_so(lab1: Host) -> None:
    Host.objects.filter(pk=lab1.pk).update(enabled=False)
    api = APIClient()
    api.force_authenticate(make_user("otto", "operator"))

    body = {FORM_FIELDS[name]: value for name, value in spec_on(lab1).as_json().items()}
    response = api.post("/api/runs/", body, format="json")

    assert response.status_code == 400
    assert response.json() == {"server_host": ["lab1 is disabled in the inventory: it takes no new runs."]}


def test_the_form_reads_back_two_client_hosts_and_one_database_for_all(lab1: Host) -> None:
    lab2, lab3 = other_host("lab2"), other_host("lab3")
    run = make_run(lab1, lab1.devices.get(name="ssd0"), lab1.pg_installs.get(), filesystem="ext4",
                   client_hosts=[lab2, lab3], shared_database=True)  # fmt: skip

    initial = run_form_initial(run)
    form = RunForm(form_data(RunSpec.from_run(run)))

    assert (initial["client_hosts"], initial["shared_database"]) == ([lab2.pk, lab3.pk], True)
    assert form.is_valid(), form.errors
    assert RunSpec.from_form_data(form.cleaned_data) == RunSpec.from_run(run)
    assert RunSpec.from_run(run).client_host_ids == (lab2.pk, lab3.pk)


def test_the_form_reads_back_a_stored_run_s_spec(lab1: Host) -> None:
    run = make_run(lab1, lab1.devices.get(name="ssd0"), lab1.pg_installs.get(), filesystem="ext4")

    form = RunForm(form_data(RunSpec.from_run(run)))

    assert form.is_valid(), form.errors
    assert RunSpec.from_form_data(form.cleaned_data) == RunSpec.from_run(run)
