"""The import page and service: pgbench output uploaded with its setup becomes a done run marked
imported, which the run page, the run list, a comparison and its CSV export show like any other;
a bad file is named with its line beside its field, and nothing is stored; viewers are told why
they cannot import."""

import csv
import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.imports.reading import read_pgbench_output
from runs.imports.services.run_import import ImportedFile, run_import
from runs.models import AuditAction, AuditEvent, Device, Host, PgInstall, Run, RunArtifact, RunOrigin, RunSample
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run
from runs.tests.imports.files import DATA, VERSIONS, reports, thread_logs
from runs.tests.imports.test_parse import PERCENTILES, SUMMARIES


@pytest.fixture
def lab(db: None) -> tuple[Host, Device, PgInstall]:
    host = make_host()
    return host, make_device(host), make_pg_install(host)


def upload(version: int, kind: str, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (DATA / f"pg{version}" / kind / name).read_bytes(), "text/plain")


def logs(version: int, kind: str) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(log.name, log.text.encode(), "text/plain") for log in thread_logs(version, kind)]


def setup(lab: tuple[Host, Device, PgInstall], **changes: Any) -> dict[str, Any]:
    host, device, pg = lab
    fields = {
        "server_host": host.pk,
        "device": device.pk,
        "filesystem": "xfs",
        "mkfs_options": "",
        "mount_options": "noatime",
        "pg_install": pg.pk,
        "pg_settings": "",
        "workload": "tpcb-like",
        "query_mode": "simple",
        "scale": "",
        "clients": "",
        "threads": "",
        "rate_limit_tps": "",
        "log_sampling_rate": "1",
    }
    return fields | changes


def post_import(client: Client, fields: dict[str, Any]) -> Any:
    return client.post("/runs/import/", fields)


def test_an_operator_imports_pgbench_17_output_and_gets_a_done_imported_run(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    otto = client_for("otto")
    files = {
        "summary": upload(17, "tx", "summary.txt"),
        "progress": upload(17, "tx", "progress.txt"),
        "transaction_logs": logs(17, "tx"),
    }
    response = post_import(otto, setup(lab) | files)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.imported_by is not None and run.imported_by.username == "otto"
    assert (run.origin, run.state) == (RunOrigin.IMPORTED, "done")
    assert (run.scale, run.clients, run.threads, run.duration_s) == (1, 2, 2, 3)  # from the report
    assert run.tps == 1127.008182 and run.latency_avg_ms == 1.768 and run.failed_transactions == 0
    assert (run.latency_p50_ms, run.latency_p99_ms) == (1.887, 6.455)
    assert list(RunSample.objects.filter(run=run).values_list("second", "tps")) == [
        (1, 1015.9),
        (2, 1201.0),
        (3, 1154.8),
    ]
    assert run.steady_tps_mean == pytest.approx((1015.9 + 1201.0 + 1154.8) / 3)
    assert [f["name"] for f in run.imported_files] == [
        "summary.txt",
        "progress.txt",
        "pgbench_log.18046",
        "pgbench_log.18046.1",
    ]
    assert RunArtifact.objects.filter(run=run).count() == 4
    assert run.environment["pgbench"]["version"].startswith("17.10")
    event = AuditEvent.objects.get(action=AuditAction.RUN_IMPORTED)
    assert event.actor_name == "otto" and event.object_id == str(run.pk) and "summary.txt" in event.message

    page = otto.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge badge-imported imported-badge"' in page and 'id="run-imported"' in page
    assert "from summary.txt (report), progress.txt (report)" in page and "never probed by benchlab" in page
    listed = otto.get("/runs/").content.decode()
    assert f'id="run-{run.pk}"' in listed and "imported by otto" in listed and "imported-badge" in listed


@pytest.mark.parametrize("version", VERSIONS)
def test_each_pgbench_versions_output_imports_into_a_done_run(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall], version: int
) -> None:
    files = {
        "summary": upload(version, "tx", "summary.txt"),
        "progress": upload(version, "tx", "progress.txt"),
        "transaction_logs": logs(version, "tx"),
    }
    response = post_import(client_for("otto"), setup(lab) | files)
    run = Run.objects.get()
    tps, _, latency, _, _ = SUMMARIES[version]
    assert response.status_code == 302 and (run.origin, run.state) == (RunOrigin.IMPORTED, "done")
    assert (run.tps, run.latency_avg_ms, run.duration_s, run.clients) == (tps, latency, 3, 2)
    assert RunSample.objects.filter(run=run).count() == 3 and run.latency_p50_ms == PERCENTILES[version][0]


def test_imported_runs_compare_and_export_beside_measured_ones(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    host, device, pg = lab
    measured = make_run(host, device, pg, steady_tps_mean=900.0, tps=900.0)
    RunSample.objects.create(run=measured, second=1, tps=900.0, latency_ms=2.0)
    otto = client_for("otto")
    fields = setup(lab, filesystem="ext4", mount_options="") | {
        "summary": upload(13, "agg", "summary.txt"),
        "progress": upload(13, "agg", "progress.txt"),
        "aggregate_logs": logs(13, "agg"),
    }
    assert post_import(otto, fields).status_code == 302
    imported = Run.objects.get(origin=RunOrigin.IMPORTED)
    assert len(imported.metrics["aggregate"]) == 3 and imported.metrics["aggregate"][0]["count"] == 125
    assert imported.started_at is not None and imported.started_at.timestamp() == 1795927293
    ids = f"{measured.pk},{imported.pk}"
    page = otto.get(f"/compare/?runs={ids}").content.decode()
    assert "imported-badge" in page and f">{imported.pk}</a>" in page
    exported = otto.get(f"/compare/export.csv?runs={ids}")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    tps_rows = [row for row in rows if row["metric"] == "steady_tps"]
    assert {row["origin"] for row in tps_rows} == {"measured", "imported"}
    assert any(str(imported.pk) in row["runs"] for row in tps_rows)


def test_a_cut_short_progress_file_is_named_with_its_line_and_nothing_is_stored(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    text = (DATA / "pg15" / "tx" / "progress.txt").read_text()
    cut = SimpleUploadedFile("progress.txt", text[:-20].encode())
    response = post_import(
        client_for("otto"), setup(lab) | {"progress": cut, "summary": upload(15, "tx", "summary.txt")}
    )
    assert response.status_code == 400
    said = response.context["form"].errors["progress"]
    assert said == [
        "line 4 of progress.txt: expected 'progress: <s> s, <tps> tps, lat <ms> ms stddev <ms>[, <n> "
        "failed]…', got 'progress: 3.0 s, 546.0 tps, lat 3.651 ms std'"
    ]
    assert "Nothing was imported." in response.content.decode()
    assert not Run.objects.exists() and not AuditEvent.objects.filter(action=AuditAction.RUN_IMPORTED).exists()


def test_a_bad_log_is_named_beside_its_own_field(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    bad = SimpleUploadedFile("t.log", b"0 1 4212 0 1795927290 606289\n0 2 oops 0 1795927290 611274\n")
    response = post_import(
        client_for("otto"), setup(lab) | {"summary": upload(16, "tx", "summary.txt"), "transaction_logs": [bad]}
    )
    assert response.status_code == 400
    assert response.context["form"].errors["transaction_logs"] == [
        "line 2 of t.log: the latency is 'oops': expected µs, 'skipped' or 'failed'"
    ]
    assert not Run.objects.exists()


def test_a_setup_that_contradicts_the_report_is_refused(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    other = make_host(name="lab2", address="10.200.0.12")
    fields = setup(lab, clients="8", device=make_device(other, name="hdd0").pk) | {
        "summary": upload(13, "tx", "summary.txt")
    }
    response = post_import(client_for("otto"), fields)
    errors = response.context["form"].errors
    assert errors["clients"] == ["8 here, but the report says clients: 2."]
    assert errors["device"] == ["hdd0 is on lab2, not on lab1."]
    assert not Run.objects.exists()


def test_neither_summary_nor_progress_is_refused(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    response = post_import(client_for("otto"), setup(lab) | {"aggregate_logs": logs(15, "agg")})
    assert response.context["form"].errors["summary"] == [
        "Upload pgbench's summary (stdout) or its progress lines (stderr), or both."
    ]


def test_a_viewer_is_told_why_they_cannot_import(
    client_for: ClientFactory, lab: tuple[Host, Device, PgInstall]
) -> None:
    vera = client_for("vera")
    response = vera.get("/runs/import/")
    assert response.status_code == 403
    assert "needs the operator role" in response.content.decode()
    assert post_import(vera, setup(lab) | {"summary": upload(17, "tx", "summary.txt")}).status_code == 403
    assert not Run.objects.exists()
    assert "import-run" not in vera.get("/runs/").content.decode()


def test_the_service_stores_nothing_when_a_write_fails_halfway(lab: tuple[Host, Device, PgInstall], users: Any) -> None:
    host, device, pg = lab
    output = read_pgbench_output(reports(15, "tx"), transaction_logs=thread_logs(15, "tx"))
    # An artifact name too long for its column: the run and its samples are written by then.
    files = [ImportedFile("report" + "x" * 120, "summary.txt", "tps = 1\n")]
    run = Run(server_host=host, device=device, pg_install=pg)
    for name in ("scale", "clients", "threads"):
        setattr(run, name, None)  # as the form leaves them blank: the report's are taken
    with pytest.raises(Exception, match="value too long"):
        run_import(run=run, output=output, files=files, user=users["otto"])
    assert not Run.objects.exists() and not RunSample.objects.exists() and not AuditEvent.objects.exists()
