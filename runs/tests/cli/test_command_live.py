"""The `benchlab` command against benchlab served by uvicorn on the test database, with real knox
tokens: the hosts, queueing a run (and a refused one), a campaign's verdicts as exit codes, its
exports, and each way of failing with its exit code. A campaign waited for on the virtual lab is
in test_command_lab.py."""

import csv
import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from runs.accounts.services.tokens import token_create
from runs.models import Campaign, Device, Run, RunState
from runs.tests.browser import serving
from runs.tests.cli.command import benchlab
from runs.tests.compare.test_confounds import _campaign, make_campaign_5
from runs.tests.factories import make_device, make_host, make_pg_install, make_user
from runs.tests.web.test_api import run_body
from runs.tests.web_server import free_port

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# The exit codes benchlab --help lists (cli/src/benchlab_cli/errors.py), as a CI job reads them.
OK, VERDICT, USAGE, API, CONNECTION = 0, 1, 2, 3, 4


@pytest.fixture(scope="module")
def server(django_db_setup: None) -> Iterator[str]:
    """benchlab on uvicorn, once the test database exists; what it queues goes to a queue no
    worker reads (runs stay queued)."""
    with serving(f"benchlab-test-unread-{uuid.uuid4().hex[:8]}") as address:
        yield address


def token_of(user: User) -> str:
    return token_create(user=user, name=f"cli test {user.username}")[1]


@pytest.fixture
def otto() -> User:
    return make_user("otto", "operator")


def test_hosts_prints_a_table_and_json_for_scripts(server: str, otto: User, tmp_path: Path) -> None:
    host = make_host(name="lab1", cpu_cores=8, memory_bytes=16 * 2**30)
    make_host(name="lab2", address="10.200.0.12", enabled=False)
    token = token_of(otto)

    shown = benchlab("hosts", url=server, token=token, home=tmp_path)
    as_json = benchlab("hosts", "--json", url=server, token=token, home=tmp_path)

    assert shown.returncode == OK, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "address", "enabled", "serves_postgres", "runs_clients", "cpu_cores",
                                "memory"]  # fmt: skip
    assert lines[1].split()[:4] == [str(host.pk), "lab1", "10.200.0.11", "yes"] and lines[1].endswith("16.0 GiB")
    assert lines[2].split()[1:4] == ["lab2", "10.200.0.12", "no"]
    assert as_json.returncode == OK and [h["name"] for h in json.loads(as_json.stdout)] == ["lab1", "lab2"]


def test_the_config_file_gives_url_and_token_and_the_command_line_overrides_it(
    server: str, otto: User, tmp_path: Path
) -> None:
    make_host(name="lab1")
    config = tmp_path / ".config" / "benchlab" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{server}"\ntoken = "{token_of(otto)}"\n')
    config.chmod(0o600)

    from_file = benchlab("hosts", home=tmp_path)
    overridden = benchlab("hosts", "--url", f"http://127.0.0.1:{free_port()}", home=tmp_path)

    assert from_file.returncode == OK and "lab1" in from_file.stdout and from_file.stderr == ""
    assert overridden.returncode == CONNECTION, overridden.stderr


def test_runs_queue_queues_the_spec_and_says_where_it_is(server: str, otto: User, tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(run_body(clients=3)))

    queued = benchlab("runs", "queue", "--from", str(spec), url=server, token=token_of(otto), home=tmp_path)

    assert queued.returncode == OK, queued.stderr
    run = Run.objects.get()
    assert (run.state, run.clients, run.queued_by) == (RunState.QUEUED, 3, otto)
    assert queued.stdout == f"queued run {run.pk}: {server}/runs/{run.pk}/\n"
    as_json = benchlab("runs", "show", str(run.pk), "--json", url=server, token=token_of(otto), home=tmp_path)
    assert json.loads(as_json.stdout)["clients"] == 3


def test_a_refused_spec_prints_the_apis_field_errors_and_queues_nothing(
    server: str, otto: User, tmp_path: Path
) -> None:
    refused = benchlab("runs", "queue", "--from", "-", url=server, token=token_of(otto), home=tmp_path,
                       stdin=json.dumps(run_body(scale="many", filesystem="fat32")))  # fmt: skip
    not_json = benchlab("runs", "queue", "--from", "-", url=server, token=token_of(otto), home=tmp_path,
                        stdin='{"clients": 4,}')  # fmt: skip

    assert refused.returncode == API, refused.stderr
    assert refused.stderr.startswith("benchlab: refused (400):\n")
    assert "  scale: " in refused.stderr and "  filesystem: " in refused.stderr and "fat32" in refused.stderr
    assert not_json.returncode == USAGE and "the run spec - is not valid JSON: " in not_json.stderr
    assert not Run.objects.exists()


def test_a_viewer_is_told_it_may_not_and_a_bad_token_is_refused(server: str, tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(run_body()))
    vera = token_of(make_user("vera", "viewer"))

    forbidden = benchlab("runs", "queue", "--from", str(spec), url=server, token=vera, home=tmp_path)
    bad_token = benchlab("hosts", url=server, token="not-a-token", home=tmp_path)

    assert forbidden.returncode == API and "forbidden (403): " in forbidden.stderr
    assert bad_token.returncode == API and "the token was refused (401): " in bad_token.stderr
    assert not Run.objects.exists()


def test_without_a_token_or_a_server_it_says_what_to_do(server: str, tmp_path: Path) -> None:
    no_token = benchlab("hosts", url=server, home=tmp_path)
    no_server = benchlab("hosts", url=f"http://127.0.0.1:{free_port()}", token="t", home=tmp_path)

    assert no_token.returncode == USAGE
    assert "no API token: set BENCHLAB_TOKEN in the environment, pass --token" in no_token.stderr
    assert no_server.returncode == CONNECTION and "did not answer: connection refused" in no_server.stderr


def _within_noise_campaign() -> Campaign:
    """Two installs with the same tps: no verdict says slower."""
    host = make_host(name="lab9", address="10.200.0.19")
    make_device(host)
    installs = [make_pg_install(host, version="15.18"), make_pg_install(host, bin_dir="/opt/pg/bin", version="15.18")]
    campaign, _ = _campaign("same", [(pg, {}, [1000.0, 1010.0, 1020.0]) for pg in installs])
    return campaign


def test_fail_on_slower_exits_1_naming_the_slower_configuration(server: str, otto: User, tmp_path: Path) -> None:
    slower, _ = make_campaign_5()  # the second install's tps is 9 % below the first's, the baseline
    same = _within_noise_campaign()
    token = token_of(otto)

    judged = benchlab("campaigns", "show", str(slower.pk), "--fail-on-slower", url=server, token=token, home=tmp_path)
    steady_only = benchlab("campaigns", "show", str(slower.pk), "--fail-on-slower", "--metric", "steady_tps",
                           "--json", url=server, token=token, home=tmp_path)  # fmt: skip
    unasked = benchlab("campaigns", "show", str(slower.pk), url=server, token=token, home=tmp_path)
    fine = benchlab("campaigns", "show", str(same.pk), "--fail-on-slower", url=server, token=token, home=tmp_path)
    no_such_metric = benchlab("campaigns", "show", str(same.pk), "--fail-on-slower", "--metric", "speed",
                              url=server, token=token, home=tmp_path)  # fmt: skip

    assert judged.returncode == VERDICT, judged.stderr
    assert "slower: steady_tps, PostgreSQL install " in judged.stderr and "15.20" in judged.stderr
    assert "slower: " in judged.stdout and "baseline" in judged.stdout
    assert steady_only.returncode == VERDICT and json.loads(steady_only.stdout)["id"] == slower.pk
    assert unasked.returncode == OK and "slower: " in unasked.stdout
    assert fine.returncode == OK, fine.stderr
    assert "within noise" in fine.stdout and "slower" not in fine.stdout + fine.stderr
    assert (
        no_such_metric.returncode == USAGE and "no metric speed in this campaign's statistics" in no_such_metric.stderr
    )


def test_fail_on_failed_exits_1_when_a_run_failed(server: str, otto: User, tmp_path: Path) -> None:
    campaign = _within_noise_campaign()
    run = Run.objects.filter(campaign=campaign).first()
    assert run is not None
    Run.objects.filter(pk=run.pk).update(state=RunState.FAILED, error="the disk went away")

    judged = benchlab("campaigns", "show", str(campaign.pk), "--fail-on-failed", url=server, token=token_of(otto),
                      home=tmp_path)  # fmt: skip

    assert judged.returncode == VERDICT and f"run {run.pk} failed (" in judged.stderr


def test_export_campaign_csv_is_the_campaign_pages_csv(server: str, otto: User, tmp_path: Path) -> None:
    campaign, _ = make_campaign_5()
    browser = Client()
    browser.force_login(otto)
    page_csv = browser.get(reverse("compare-export-csv"), {"campaign": str(campaign.pk), "what": "table"}).content
    token = token_of(otto)

    exported = benchlab("export", "campaign", str(campaign.pk), "--csv", "-o", str(tmp_path / "t.csv"), url=server,
                        token=token, home=tmp_path)  # fmt: skip
    summary = benchlab("export", "campaign", str(campaign.pk), "--what", "summary", url=server, token=token,
                       home=tmp_path)  # fmt: skip
    as_json = benchlab("export", "campaign", str(campaign.pk), "--json", url=server, token=token, home=tmp_path)
    missing = benchlab("export", "campaign", str(campaign.pk + 100), url=server, token=token, home=tmp_path)

    assert exported.returncode == OK and (tmp_path / "t.csv").read_bytes() == page_csv
    assert [row[0] for row in csv.reader(io.StringIO(page_csv.decode()))][1:] == ["4 kB", "8 kB"]
    rows = list(csv.DictReader(io.StringIO(summary.stdout)))
    assert summary.returncode == OK and {row["verdict"] for row in rows if row["metric"] == "steady_tps"} == {
        "", "slower"}  # fmt: skip
    assert as_json.returncode == OK and json.loads(as_json.stdout)["heading"] == "page size"
    assert missing.returncode == API and "not found (404)" in missing.stderr


def test_a_plan_file_that_is_no_object_is_refused_before_anything_is_sent(server: str, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("[1, 2]")
    no_file = benchlab("campaigns", "create", "--from", str(tmp_path / "nope.json"), url=server, token="t",
                       home=tmp_path)  # fmt: skip
    listed = benchlab("campaigns", "create", "--from", str(plan), url=server, token="t", home=tmp_path)
    (tmp_path / "object.json").write_text('{"name": "a plan"}')
    unwaited = benchlab("campaigns", "create", "--from", str(tmp_path / "object.json"), "--fail-on-slower",
                        url=server, token="t", home=tmp_path)  # fmt: skip

    assert no_file.returncode == USAGE and "cannot read the campaign plan " in no_file.stderr
    assert listed.returncode == USAGE and "must hold a JSON object" in listed.stderr
    assert unwaited.returncode == USAGE and "--fail-on-slower and --fail-on-failed need --wait" in unwaited.stderr
    assert not Campaign.objects.exists() and not Device.objects.exists()
