"""The workload library without a lab: parameters refused naming their range, the admin's script
checks, the script as run, the queue form, the API and a campaign over a parameter."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import MatrixError, Variable, expand
from runs.forms.runs import RunForm
from runs.lab.errors import InvalidOption
from runs.lab.pgbench.library import Parameter, check_library_script, parameter_values, rendered_script
from runs.lab.pgbench.library.shipped import SHIPPED
from runs.models import Host, Run, Workload, WorkloadScript
from runs.tests.campaigns.test_campaigns import lab1
from runs.tests.factories import make_run, run_form_fields
from runs.tests.web.test_api import api_client

SKEW = Parameter("skew", "skew", 1.001, 1000, 1.1)
ROWS = Parameter("rows", "rows", 1, 1000, 1, integer=True)


def test_a_value_out_of_its_range_is_refused_naming_the_range() -> None:
    with pytest.raises(InvalidOption) as low:
        parameter_values([SKEW], {"skew": 0.5})
    with pytest.raises(InvalidOption) as fraction:
        parameter_values([ROWS], {"rows": 2.5})
    with pytest.raises(InvalidOption) as unknown:
        parameter_values([SKEW], {"skw": 2})
    with pytest.raises(InvalidOption) as text:
        parameter_values([SKEW], {"skew": "high"})

    assert str(low.value) == "skew must be between 1.001 and 1000, not 0.5"
    assert str(fraction.value) == "rows must be a whole number between 1 and 1000, not 2.5"
    assert str(unknown.value) == "unknown parameter skw: this script takes skew"
    assert str(text.value) == "skew must be a number between 1.001 and 1000, not 'high'"
    assert parameter_values([SKEW, ROWS], {"rows": 3}) == {"skew": 1.1, "rows": 3}


def test_the_script_as_run_sets_each_parameter_before_the_library_text() -> None:
    text = rendered_script("skewed v1", "SELECT :skew, :rows;\n", [SKEW, ROWS], {"skew": 1.3})

    assert text == "-- benchlab workload library: skewed v1\n\\set skew 1.3\n\\set rows 1\nSELECT :skew, :rows;\n"


@pytest.mark.parametrize(
    ("script", "parameters", "refusal"),
    [
        ("SELECT :skew;", [], "the script uses :skew but neither sets nor declares it"),
        ("\\shell id\nSELECT 1;", [], "\\shell is not allowed"),
        ("SELECT 1;", [{"name": "scale", "minimum": 1, "maximum": 2, "default": 1}], "pgbench sets it itself"),
        ("SELECT 1;", [{"name": "Bad-Name", "minimum": 1, "maximum": 2, "default": 1}], "a pgbench variable name"),
        ("SELECT 1;", [{"name": "x", "minimum": 5, "maximum": 2, "default": 3}], "minimum ≤ default ≤ maximum"),
        ("SELECT 1;", [{"name": "x", "minimum": 1, "maximum": 2}], "each parameter is an object"),
    ],
)
def test_the_admin_refuses_a_script_or_a_declaration_saying_why(
    db: None, script: str, parameters: list[dict[str, Any]], refusal: str
) -> None:
    row = WorkloadScript(name="mine", version=1, title="Mine", description="d", script=script, parameters=parameters)

    with pytest.raises(ValidationError) as refused:
        row.full_clean()

    assert refusal in str(refused.value)


def test_a_script_may_use_pgbenchs_own_variables_its_sets_and_its_parameters(db: None) -> None:
    script = "\\set aid random(1, 100000 * :scale)\nSELECT :aid, :client_id, :skew, now()::date;\n"
    row = WorkloadScript(name="mine", version=1, title="Mine", description="d", script=script,
                         parameters=[SKEW.as_json()])  # fmt: skip
    row.full_clean()
    for shipped in SHIPPED:  # every shipped script passes the admin's own checks
        check_library_script(shipped.script, shipped.parameters)


def test_the_shipped_scripts_are_in_a_fresh_database_as_their_files_say(db: None) -> None:
    rows = {(s.name, s.version): s for s in WorkloadScript.objects.filter(shipped=True)}

    assert set(rows) == {(s.name, s.version) for s in SHIPPED} and len(rows) >= 6
    for shipped in SHIPPED:
        assert rows[shipped.name, shipped.version].script == shipped.script
        assert rows[shipped.name, shipped.version].declared == shipped.parameters
    tpcc = rows["tpcc-like", 1].description
    assert "TPC-C-like, not TPC-C" in tpcc and "not tpmC" in tpcc and "fair-use" in tpcc


def library_form(host: Host, **changes: object) -> dict[str, object]:
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    fields = run_form_fields(host, host.devices.get(name="hdd"), host.pg_installs.get(), scale=1)
    return fields | {"workload": Workload.LIBRARY, "library_script": script.pk} | changes


def test_the_form_reads_the_chosen_scripts_parameters_and_refuses_one_out_of_range(db: None) -> None:
    host = lab1()
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    good = RunForm(library_form(host, **{f"param-{script.pk}-skew": "3"}))
    bad = RunForm(library_form(host, **{f"param-{script.pk}-skew": "0.5"}))
    other = RunForm(library_form(host, workload="tpcb-like", **{f"param-{script.pk}-skew": "0.5"}))

    assert good.is_valid(), good.errors
    assert good.cleaned_data["workload_params"] == {"skew": 3}
    assert not bad.is_valid()
    assert bad.errors["workload_params"] == ["skewed-zipfian v1: skew must be between 1.001 and 1000, not 0.5."]
    assert other.is_valid(), other.errors  # the page's script and inputs mean nothing without the library
    assert (other.cleaned_data["library_script"], other.cleaned_data["workload_params"]) == (None, {})
    page = "\n".join(str(choice.script.description) for choice in good.library_choices())
    assert "random_zipfian" in page


def test_a_library_workload_needs_its_script(db: None) -> None:
    host = lab1()
    form = RunForm(library_form(host, library_script=""))

    assert not form.is_valid()
    assert "A library workload needs its script: choose one of" in form.errors["library_script"][0]


def test_the_api_queues_a_library_run_by_name_and_refuses_bad_parameters(users: dict[str, User]) -> None:
    host = lab1()
    client = api_client(users["otto"])
    body = run_form_fields(host, host.devices.get(name="hdd"), host.pg_installs.get(), scale=1)
    body = {name: value for name, value in body.items() if value != ""}  # the form's empty fields: left out
    body |= {"workload": "library", "library_script": "insert-only"}

    created = client.post("/api/runs/", body | {"workload_params": {"rows": 3}}, format="json")
    out_of_range = client.post("/api/runs/", body | {"workload_params": {"rows": 0}}, format="json")
    unknown = client.post("/api/runs/", body | {"library_script": "nope"}, format="json")
    old_version = client.post("/api/runs/", body | {"library_script_version": 7}, format="json")
    not_library = client.post("/api/runs/", body | {"workload": "tpcb-like"}, format="json")

    assert created.status_code == 201, created.json()
    run = Run.objects.get()
    assert run.library_script is not None
    assert (run.library_script.name, run.workload_params) == ("insert-only", {"rows": 3})
    assert "\\set rows 3\n" in run.script_as_run and run.script_as_run.endswith(run.library_script.script)
    assert created.json()["library_script"] == "insert-only" and created.json()["library_script_version"] == 1
    assert out_of_range.status_code == 400
    assert out_of_range.json()["workload_params"] == ["insert-only v1: rows must be between 1 and 1000, not 0."]
    assert unknown.status_code == 400 and "No library script 'nope': the library has" in str(unknown.json())
    assert old_version.status_code == 400 and "insert-only has versions 1, not 7" in str(old_version.json())
    assert not_library.status_code == 400 and "workload" in not_library.json()
    assert Run.objects.count() == 1


def test_a_campaign_sweeps_a_parameter_and_refuses_a_value_out_of_its_range(db: None) -> None:
    host = lab1()
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    base = RunSpec(server_host_id=host.pk, device_id=host.devices.get(name="hdd").pk, filesystem="ext4",
                   pg_install_id=host.pg_installs.get().pk, scale=1, clients=2, threads=1, duration_s=5,
                   workload="library", library_script_id=script.pk)  # fmt: skip

    cells = expand(base, [Variable("param:skew", (1.1, "3", 0.5))], Inventory.load())

    assert [c.values for c in cells] == [(("parameter skew", f"skew {v}"),) for v in ("1.1", "3", "0.5")]
    assert [c.spec.workload_params for c in cells] == [(("skew", 1.1),), (("skew", 3),), (("skew", 0.5),)]
    assert [c.valid for c in cells] == [True, True, False]
    assert cells[2].reasons() == ["workload params: skewed-zipfian v1: skew must be between 1.001 and 1000, not 0.5."]
    with pytest.raises(MatrixError, match="parameter skew: 'steep' is not a number"):
        expand(base, [Variable("param:skew", ("steep",))], Inventory.load())


def test_a_campaign_sweeps_library_scripts_keeping_the_parameters_each_declares(db: None) -> None:
    host = lab1()
    base = RunSpec(server_host_id=host.pk, device_id=host.devices.get(name="hdd").pk, filesystem="ext4",
                   pg_install_id=host.pg_installs.get().pk, scale=1, clients=2, threads=1, duration_s=5,
                   workload="library", workload_params={"rows": 3})  # type: ignore[arg-type]  # fmt: skip

    cells = expand(base, [Variable("library_script", ("insert-only", "read-mostly v1"))], Inventory.load())

    assert [c.values[0][1] for c in cells] == ["insert-only v1", "read-mostly v1"]
    assert [c.spec.workload_params for c in cells] == [(("rows", 3),), ()]
    assert all(c.valid for c in cells), [c.errors for c in cells]


def test_labels_and_what_differs_name_the_script_and_its_parameters(db: None) -> None:
    from runs.bench.spec_labels import spec_value

    host = lab1()
    script = WorkloadScript.objects.get(name="skewed-zipfian", version=1)
    run = make_run(host, host.devices.get(name="hdd"), host.pg_installs.get(), workload="library",
                   library_script=script, workload_params={"skew": 1.3})  # fmt: skip

    assert spec_value(run, "library_script_id") == "skewed-zipfian v1"
    assert spec_value(run, "workload_params", with_label=True) == "skew 1.3"
    assert RunSpec.from_run(run).workload_params == (("skew", 1.3),)
    assert not spec_errors(RunSpec.from_run(run), Inventory.load()).get("workload_params")


def test_the_admin_keeps_a_shipped_version_read_only_and_offers_the_next_one(client_for: Any) -> None:
    admin = client_for("ada")
    shipped = WorkloadScript.objects.get(name="insert-only", version=1)
    page = admin.get(f"/admin/runs/workloadscript/{shipped.pk}/change/").content.decode()
    offered = admin.get(f"/admin/runs/workloadscript/add/?new_version_of={shipped.pk}").content.decode()
    params = '[{"name": "rows", "label": "rows", "minimum": 1, "maximum": 10, "default": 1, "integer": true}]'
    added = admin.post("/admin/runs/workloadscript/add/", {
        "name": "insert-only", "version": 2, "title": "Insert-only", "description": "d",
        "script": "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT 1, 1, 1, 0, now() "
                  "FROM generate_series(1, :rows);", "parameters": params})  # fmt: skip
    refused = admin.post("/admin/runs/workloadscript/add/", {
        "name": "mine", "version": 1, "title": "Mine", "description": "d", "script": "SELECT :x;",
        "parameters": "[]"})  # fmt: skip

    assert "Shipped with benchlab: this version cannot be edited" in page and 'name="script"' not in page
    assert 'name="version" value="2"' in offered and "generate_series(1, :rows)" in offered
    assert added.status_code == 302, added.content.decode()[-2000:]
    assert WorkloadScript.objects.filter(name="insert-only", version=2, shipped=False).exists()
    assert (
        refused.status_code == 200 and "the script uses :x but neither sets nor declares it" in refused.content.decode()
    )
