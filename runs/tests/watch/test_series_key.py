"""The stored series key (Run.series_key): written when a run is queued, by the form ("Run again"
included), the API and campaigns, equal to the key of the run's spec as read back; filled in for
older runs by migration 0036_run_series_key; and what the watch reads a series by."""

from dataclasses import replace
from importlib import import_module
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from runs.bench.specs import RunSpec
from runs.campaigns.services.campaigns import campaign_create
from runs.models import Run, RunState, WorkloadScript
from runs.tests.bench.queueing import form, lab1
from runs.tests.campaigns.test_campaigns import devices_and_options, plan_on
from runs.tests.campaigns.test_campaigns import lab1 as campaign_lab
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.watch.history import History, make_history
from runs.tests.web.test_api import api_client, client_hosts, run_body
from runs.watch.selectors import recurring_keys, recurring_series, series_detail
from runs.watch.series import series_key

pytestmark = pytest.mark.django_db

MIGRATION = ("runs", "0036_run_series_key")


def key_as_read_back(run: Run) -> str:
    return series_key(RunSpec.from_run(Run.objects.get(pk=run.pk)))


def test_the_migration_fills_in_the_key_of_a_run_with_client_hosts_and_parameters() -> None:
    backfill = import_module("runs.migrations.0036_run_series_key").backfill_series_keys
    host = make_host(name="lab1")
    clients = [make_host(name=name, address=f"10.200.0.{n}") for n, name in enumerate(("lab3", "lab2"), start=30)]
    script = WorkloadScript.objects.order_by("pk").first()
    assert script is not None  # the shipped scripts, written after migrate
    device, pg = make_device(host), make_pg_install(host)
    runs = [
        make_run(host, device, pg, client_hosts=clients, shared_database=True,
                 workload="library", library_script=script, workload_params={"skew": 1.3, "rows": 8},
                 rate_limit_tps=250, state=state)
        for state in (RunState.DONE, RunState.FAILED)
    ]  # fmt: skip
    expected = [key_as_read_back(run) for run in runs]
    Run.objects.update(series_key=None)
    historical = MigrationExecutor(connection).loader.project_state(MIGRATION).apps

    backfill(historical, None)

    assert list(Run.objects.order_by("pk").values_list("series_key", flat=True)) == expected
    assert expected[0] == expected[1] and len(expected[0]) == 16  # every state: a failed run is of its series too
    assert expected[0] != key_as_read_back(make_run(host, runs[0].device, runs[0].pg_install))  # no clients: another


def test_a_run_queued_by_the_form_has_its_key_and_run_again_the_same(client_for: ClientFactory) -> None:
    host = lab1()
    otto = client_for("otto")
    body = form(host, rate_limit_tps="250", random_seed="")
    first = otto.post(reverse("run-new"), body)
    assert first.status_code == 302, first.context and first.context["form"].errors
    run = Run.objects.get()
    assert run.series_key == key_as_read_back(run)
    again = otto.get(reverse("run-new"), {"again": run.pk}).context["form"].initial
    otto.post(reverse("run-new"), body | {k: v for k, v in again.items() if k in body and v is not None})
    second = Run.objects.exclude(pk=run.pk).get()
    assert second.series_key == run.series_key == key_as_read_back(second)


def test_a_run_queued_through_the_api_with_client_hosts_has_its_key() -> None:
    client = api_client(make_user("otto", "operator"))
    lab3, lab2 = client_hosts("lab3", "lab2")
    answer = client.post("/api/runs/", run_body(client_hosts=[lab3, lab2], rate_limit_tps=250), format="json")
    assert answer.status_code == 201, answer.json()
    run = Run.objects.get(pk=answer.json()["id"])
    assert run.series_key == key_as_read_back(run)


def test_a_campaigns_runs_have_their_configurations_keys(users: dict[str, Any]) -> None:
    host = campaign_lab()
    plan = plan_on(host, devices_and_options(host), repetitions=2)
    campaign = campaign_create(plan=replace(plan, base=plan.base.replace(rate_limit_tps=250)), by=users["otto"])
    runs = list(Run.objects.filter(campaign=campaign))
    assert len(runs) == 8 and all(run.series_key == key_as_read_back(run) for run in runs)
    by_configuration = {(run.configuration_id, run.series_key) for run in runs}
    assert len(by_configuration) == 4 == len({key for _, key in by_configuration})  # repetitions share one


def test_the_watch_reads_a_series_by_its_stored_key(users: dict[str, Any]) -> None:
    history: History = make_history(users["otto"])
    run = history.rounds[0][0]
    key = run.series_key
    assert key == key_as_read_back(run) and recurring_keys() == [key]
    Run.objects.filter(pk=history.rounds[1][0].pk).update(series_key="0" * 16)  # the column is what counts
    detail = series_detail(key)
    assert detail is not None and len(detail.rounds) == 11
    assert recurring_series([run, history.once]) == {run.pk: (key, 11)}
