"""The sysbench driver through the queue form, the API and a campaign's variables: each rule
between the driver and the other fields refuses beside its field, naming what is allowed, and
nothing is written; a good sysbench run is queued, and a campaign may mix both drivers."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from rest_framework.test import APIClient

from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import MatrixError, Variable, check_variables, expand
from runs.campaigns.services.campaigns import CampaignPlan, campaign_create
from runs.forms.campaigns import MatrixForm
from runs.lab.sysbench.data_size import BYTES_PER_SYSBENCH_ROW, sysbench_need
from runs.models import Host, Run, RunState, WorkloadScript
from runs.tests.bench.queueing import assert_the_api_refuses, assert_the_form_refuses, form, lab1
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_host, make_pg_install, make_user

pytestmark = pytest.mark.django_db

SYSBENCH: dict[str, object] = {"driver": "sysbench", "workload": "oltp_read_write", "query_mode": "simple"}
REFUSED: list[tuple[dict[str, object], str, str]] = [
    ({"workload": "tpcb-like"}, "workload", "driver sysbench runs one of its OLTP tests (oltp_read_only, "),
    ({"custom_script": "SELECT 1;"}, "custom_script", "a custom script is pgbench's"),
    ({"query_mode": "prepared"}, "query_mode", "the query mode is pgbench's -M"),
    ({"latency_limit_ms": 5}, "latency_limit_ms", "sysbench has no latency limit"),
    ({"scale": 50}, "scale", "the scale is pgbench's; sysbench's data is its tables × table size: leave it 10"),
    ({"partitions": 4}, "partitions", "partitions are pgbench -i's"),
    ({"fillfactor": 90}, "fillfactor", "leave it 100 for driver sysbench"),
    ({"unlogged_tables": True}, "unlogged_tables", "leave it no for driver sysbench"),
    ({"foreign_keys": True}, "foreign_keys", "foreign keys are pgbench -i's"),
    ({"init_steps": "dtgvp"}, "init_steps", "initialisation steps are pgbench -i's"),
    ({"log_sampling_rate": 0.5}, "log_sampling_rate", "sysbench keeps no per-transaction log"),
    ({"rate_limit_tps": 250.5}, "rate_limit_tps", "sysbench's --rate takes whole transactions per second: give 250"),
    ({"random_seed": 2**31}, "random_seed", "random seed for sysbench must be a whole number from 1 to 2,147,483,647"),
    ({"random_seed": 0}, "random_seed", "from 1 to 2,147,483,647, not 0"),
    ({"sysbench_tables": 1001}, "sysbench_tables", "sysbench tables must be between 1 and 1000; got 1001."),
    ({"sysbench_table_size": 0}, "sysbench_table_size", "sysbench table size (rows) must be between 1 and"),
    (
        {"sysbench_tables": 100, "sysbench_table_size": 1_000_000},
        "sysbench_table_size",
        "rows a table or fewer, fewer tables",
    ),
]
PGBENCH_REFUSED: list[tuple[dict[str, object], str, str]] = [
    ({"workload": "oltp_read_only"}, "workload", "oltp_read_only is a sysbench test: choose driver sysbench"),
    ({"sysbench_tables": 8}, "sysbench_tables", "sysbench tables apply to driver sysbench only: leave it at 1"),
    ({"sysbench_table_size": 5}, "sysbench_table_size", "leave it at 10,000 for pgbench"),
    ({"driver": "hammerdb"}, "driver", "valid choice"),
]


@pytest.mark.parametrize(
    "changes, field, message", [({**SYSBENCH, **c}, f, m) for c, f, m in REFUSED] + PGBENCH_REFUSED
)
def test_the_form_refuses_what_the_driver_cannot_run_beside_its_field(
    client_for: ClientFactory, changes: dict[str, object], field: str, message: str
) -> None:
    assert_the_form_refuses(client_for("otto"), form(lab1(), **changes), field, message)


@pytest.mark.parametrize("changes, field, message", [({**SYSBENCH, **c}, f, m) for c, f, m in REFUSED[:3]])
def test_the_api_refuses_with_400_naming_the_field_and_writes_nothing(
    changes: dict[str, object], field: str, message: str
) -> None:
    assert_the_api_refuses(form(lab1(), rate_limit_tps=None, random_seed=None) | changes, field, message)


def test_client_hosts_are_refused_for_sysbench(client_for: ClientFactory) -> None:
    host, client = lab1(), make_host(name="lab2", address="10.0.0.2", runs_clients=True, serves_postgres=False)
    make_pg_install(client)

    response = client_for("otto").post(reverse("run-new"), form(host, **SYSBENCH, client_hosts=[client.pk]))

    assert response.status_code == 400
    assert "benchlab runs sysbench on the server only" in str(response.context["form"].errors["client_hosts"])
    assert not Run.objects.exists()


def test_a_sysbench_run_is_queued_with_one_thread_per_client(client_for: ClientFactory) -> None:
    response = client_for("otto").post(
        reverse("run-new"), form(lab1(), **SYSBENCH, sysbench_tables=4, sysbench_table_size=5000, clients=8)
    )

    assert response.status_code == 302, response.context["form"].errors
    run = Run.objects.get()
    assert (run.driver, run.workload, run.sysbench_tables, run.sysbench_table_size) == (
        "sysbench", "oltp_read_write", 4, 5000,
    )  # fmt: skip
    assert run.threads == run.clients == 8  # sysbench's --threads are its clients
    assert (
        run.random_seed is not None and 1 <= run.random_seed < 2**31
    )  # a seed sysbench takes (0 would be "from the clock")


def test_the_api_fills_left_out_driver_fields_with_their_defaults() -> None:
    api = APIClient()
    api.force_authenticate(make_user("otto", "operator"))
    body = form(lab1(), rate_limit_tps=None, random_seed=None)
    for name in ("driver", "sysbench_tables", "sysbench_table_size"):
        del body[name]

    created = api.post("/api/runs/", body, format="json")
    sysbench = api.post("/api/runs/", {**body, "driver": "sysbench", "workload": "oltp_point_select",
                                       "query_mode": "simple", "threads": 1}, format="json")  # fmt: skip

    assert created.status_code == 201, created.json()
    assert created.json()["driver"] == "pgbench" and created.json()["sysbench_tables"] == 1
    assert sysbench.status_code == 201, sysbench.json()
    assert sysbench.json()["sysbench_table_size"] == 10_000 and sysbench.json()["threads"] == 4


def test_the_data_that_must_fit_is_sysbench_s_rows() -> None:
    host = lab1()  # a 1 GiB device: about 889 MiB once formatted
    spec = RunSpec(
        server_host_id=host.pk, device_id=host.devices.get().pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get().pk, driver="sysbench", workload="oltp_read_only",
    )  # fmt: skip

    fits = spec_errors(spec.replace(sysbench_tables=10, sysbench_table_size=100_000), Inventory.load())
    too_big = spec_errors(spec.replace(sysbench_tables=10, sysbench_table_size=1_000_000), Inventory.load())

    assert sysbench_need(10, 100_000).data_bytes == 10 * 100_000 * BYTES_PER_SYSBENCH_ROW
    assert fits == {}
    assert list(too_big) == ["sysbench_table_size"]
    # 10 x 1,000,000 rows x 256 B = 2.56e9 B, + 1 GiB of WAL + 40 MiB of cluster = 3.42 GiB. What fits in
    # 932,007,903 B: twice the data (its WAL) and the cluster, (932,007,903 - 41,943,040) / 2 / 2560 rows.
    assert too_big["sysbench_table_size"][0].startswith("10 sysbench tables of 1,000,000 rows needs about 3.42 GiB")
    assert too_big["sysbench_table_size"][0].endswith(
        "choose 173,840 rows a table or fewer, fewer tables, or a larger device."
    )


def test_a_library_script_is_refused_for_sysbench_beside_its_field() -> None:
    host = lab1()
    script = WorkloadScript.objects.get(name="read-mostly")
    spec = RunSpec(
        server_host_id=host.pk, device_id=host.devices.get().pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get().pk, driver="sysbench", workload="oltp_read_only",
    )  # fmt: skip

    with_script = spec_errors(spec.replace(library_script_id=script.pk), Inventory.load())
    with_parameters = spec_errors(spec.replace(workload_params={"read_percent": 50}), Inventory.load())

    for errors in (with_script, with_parameters):
        assert list(errors) == ["library_script"], errors
        assert "The workload library holds pgbench scripts; sysbench runs its own tests" in errors["library_script"][0]


def base_spec(host: Host) -> RunSpec:
    return RunSpec(
        server_host_id=host.pk, device_id=host.devices.get().pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get().pk, scale=1, clients=2, threads=1, duration_s=5,
    )  # fmt: skip


def test_a_campaign_mixes_both_drivers_and_checks_each_cell() -> None:
    host = lab1()
    variables = [Variable("workload", ("tpcb-like", "oltp_read_write")), Variable("sysbench_tables", (1, 4))]

    cells = expand(base_spec(host).replace(scale=10), variables, Inventory.load())

    assert [cell.label for cell in cells] == [
        "tpcb-like · 1 sysbench tables", "tpcb-like · 4 sysbench tables",
        "oltp_read_write · 1 sysbench tables", "oltp_read_write · 4 sysbench tables",
    ]  # fmt: skip
    assert [cell.valid for cell in cells] == [True, False, True, True]
    assert cells[1].reasons() == [
        "sysbench tables: sysbench tables apply to driver sysbench only: leave it at 1 for pgbench."
    ]
    assert [cell.spec.driver for cell in cells] == ["pgbench", "pgbench", "sysbench", "sysbench"]
    assert cells[2].spec.threads == cells[2].spec.clients == 2


def test_a_campaign_s_driver_variable_takes_the_driver_s_workload_and_refuses_what_sysbench_cannot() -> None:
    host = lab1()

    cells = expand(base_spec(host), [Variable("driver", ("pgbench", "sysbench"))], Inventory.load())

    assert [cell.label for cell in cells] == ["pgbench tpcb-like", "sysbench oltp_read_write"]
    assert cells[0].valid and not cells[1].valid  # the base's scale 1 is pgbench's
    assert cells[1].reasons() == [
        "scale: the scale is pgbench's; sysbench's data is its tables × table size: leave it 10 for driver sysbench."
    ]
    with pytest.raises(MatrixError, match="driver: 'hammerdb' is not one of pgbench, sysbench"):
        check_variables([Variable("driver", ("hammerdb",))])


def test_the_campaign_page_sweeps_the_driver_s_fields() -> None:
    host = lab1()
    page = MatrixForm(data={"driver": ["sysbench"], "sysbench_tables": "2, 8", "sysbench_table_size": "1000"})
    bad = MatrixForm(data={"sysbench_tables": "many"})

    assert page.is_valid(), page.errors
    cells = expand(base_spec(host).replace(scale=10), page.variables(), Inventory.load())
    assert [cell.label for cell in cells] == [
        "sysbench oltp_read_write · 2 sysbench tables · 1,000 rows a table",
        "sysbench oltp_read_write · 8 sysbench tables · 1,000 rows a table",
    ]
    assert all(cell.valid for cell in cells), [cell.reasons() for cell in cells]
    assert not bad.is_valid()
    assert "sysbench_tables: 'many' is not a whole number" in bad.errors["__all__"][0]


def test_a_campaign_of_both_drivers_warns_on_its_page_that_their_transactions_differ(
    users: dict[str, User], client_for: ClientFactory
) -> None:
    host = lab1()
    variables = [Variable("workload", ("tpcb-like", "oltp_read_write"))]
    plan = CampaignPlan(name="both", description="", base=base_spec(host).replace(scale=10), variables=variables,
                        repetitions=2)  # fmt: skip
    campaign = campaign_create(plan=plan, by=users["otto"])
    for run in Run.objects.filter(campaign=campaign):
        run.state, run.steady_tps_mean = RunState.DONE, 300.0 if run.driver == "sysbench" else 500.0
        run.save(update_fields=["state", "steady_tps_mean"])

    page = client_for("vera").get(reverse("campaign-detail", args=[campaign.pk]))

    assert page.status_code == 200
    warnings = page.context["warnings"]
    assert warnings, page.context["tables"]
    assert warnings[0].startswith("These runs used different drivers (pgbench: group 0; sysbench: group 1)")
    assert "their tps are different units" in page.content.decode()
