"""pgbench's storage options and latency limit through the queue form, the API and a campaign's
variables: bad values are refused beside their field, naming what is allowed, and nothing is
written; good ones reach the run, its command and "what differs"."""

import pytest
from django.urls import reverse

from runs.bench.services.lab_specs import benchmark_spec
from runs.bench.spec_checks import Inventory
from runs.bench.spec_labels import spec_value
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import MatrixError, Variable, check_variables, expand
from runs.campaigns.services.campaigns import CampaignPlan, CampaignRefused, campaign_create
from runs.forms.campaigns import MatrixForm
from runs.lab.pgbench.commands import Connection, init_command, run_command
from runs.models import Campaign, Host, Run
from runs.tests.bench.queueing import assert_the_api_refuses, assert_the_form_refuses, form, lab1
from runs.tests.conftest import ClientFactory

pytestmark = pytest.mark.django_db

REFUSED = [
    ({"partitions": 1001}, "partitions", "partitions must be between 0 and 1000; got 1001."),
    ({"fillfactor": 5}, "fillfactor", "fillfactor must be between 10 and 100; got 5."),
    ({"latency_limit_ms": 0}, "latency_limit_ms", "latency limit (ms) must be between 0.1 and 600000; got 0."),
    ({"partition_method": "hash"}, "partition_method", "a partition method (hash) needs partitions"),
    ({"partition_method": "list", "partitions": 2}, "partition_method", "valid choice"),
    ({"init_steps": "dtgq"}, "init_steps", "'q' is not a pgbench step; use the letters dtgGvpf"),
    ({"init_steps": "dtgvpf"}, "init_steps", "tick foreign keys too, or leave f out"),
    ({"init_steps": "dtgvp", "foreign_keys": True}, "init_steps", "add f after p"),
]


@pytest.mark.parametrize("changes, field, message", REFUSED)
def test_the_form_refuses_a_bad_value_beside_its_field_and_queues_nothing(
    client_for: ClientFactory, changes: dict[str, object], field: str, message: str
) -> None:
    assert_the_form_refuses(client_for("otto"), form(lab1(), **changes), field, message)


@pytest.mark.parametrize("changes, field, message", REFUSED)
def test_the_api_refuses_a_bad_value_naming_the_field_and_writes_nothing(
    changes: dict[str, object], field: str, message: str
) -> None:
    assert_the_api_refuses(form(lab1(), rate_limit_tps=None, random_seed=None) | changes, field, message)


def test_the_options_reach_the_run_and_its_commands(client_for: ClientFactory) -> None:
    options = {
        "partitions": 4, "partition_method": "hash", "fillfactor": 90, "unlogged_tables": True,
        "foreign_keys": True, "init_steps": "dtGvpf", "rate_limit_tps": 500, "latency_limit_ms": 2.5,
    }  # fmt: skip
    response = client_for("otto").post(reverse("run-new"), form(lab1(), **options))

    run = Run.objects.get()
    assert response.status_code == 302
    spec = benchmark_spec(run)
    connection = Connection(host="/s", port=1)
    assert init_command("/b", connection, spec.init)[4:10] == [
        "--init-steps=dtGvpf", "--fillfactor=90", "--partitions=4", "--partition-method=hash", "--unlogged-tables",
        "-h",
    ]  # fmt: skip
    assert "--latency-limit=2.5" in run_command("/b", connection, spec.run, "/r")
    assert spec_value(run, "init_steps", with_label=True) == "init steps dtGvpf"
    assert spec_value(run, "latency_limit_ms", with_label=True) == "latency limit 2.5 ms"


def base_spec(host: Host) -> RunSpec:
    return RunSpec(
        server_host_id=host.pk, device_id=host.devices.get().pk, filesystem="ext4",
        pg_install_id=host.pg_installs.get().pk, scale=1, clients=2, threads=1, duration_s=5,
    )  # fmt: skip


def test_a_campaign_sweeps_them_and_names_them_in_what_differs() -> None:
    host = lab1()
    variables = [
        Variable("partitions", (0, 4)),
        Variable("unlogged_tables", ("no", "yes")),
        Variable("latency_limit_ms", (None, "5")),
    ]

    cells = expand(base_spec(host), variables, Inventory.load())

    assert all(cell.valid for cell in cells) and len(cells) == 8
    assert cells[-1].spec.partitions == 4 and cells[-1].spec.unlogged_tables and cells[-1].spec.latency_limit_ms == 5
    assert cells[0].spec.differences(cells[-1].spec) == ("latency_limit_ms", "partitions", "unlogged_tables")


def test_a_campaign_refuses_a_value_naming_the_variable_and_writes_nothing(users: dict) -> None:
    host = lab1()
    with pytest.raises(MatrixError, match="unlogged tables: 'maybe' is not yes or no"):
        check_variables([Variable("unlogged_tables", ("maybe",))])
    with pytest.raises(MatrixError, match=r"latency limit \(ms\): 'soon' is not a number"):
        check_variables([Variable("latency_limit_ms", ("soon",))])
    with pytest.raises(MatrixError, match=r"latency limit \(ms\): \[\] is not a number"):  # JSON's list: was a 500
        check_variables([Variable("latency_limit_ms", ([],))])
    plan = CampaignPlan(
        name="study", description="", base=base_spec(host), variables=[Variable("fillfactor", (5, 200))], repetitions=1
    )

    with pytest.raises(CampaignRefused, match="No combination of the values can run"):
        campaign_create(plan=plan, by=users["otto"])

    cells = expand(base_spec(host), [Variable("fillfactor", (5,))], Inventory.load())
    assert cells[0].reasons() == ["fillfactor: fillfactor must be between 10 and 100; got 5."]
    assert not Campaign.objects.exists() and not Run.objects.exists()


def test_the_campaign_page_sweeps_them_and_refuses_a_bad_value_naming_it() -> None:
    host = lab1()
    page = MatrixForm(data={"partitions": "0, 4", "unlogged_tables": ["no", "yes"], "latency_limit_ms": "(none), 5"})
    bad = MatrixForm(data={"partitions": "four"})

    assert page.is_valid(), page.errors
    cells = expand(base_spec(host), page.variables(), Inventory.load())
    assert cells[0].label == "no latency limit · not partitioned · logged tables"
    assert cells[-1].label == "latency limit 5 ms · 4 partitions · unlogged tables"
    assert len(cells) == 8 and all(cell.valid for cell in cells)
    assert not bad.is_valid()
    assert bad.errors["__all__"] == [
        "partitions: 'four' is not a whole number; give partitions as a whole number, 10 or \"10\""
    ]
