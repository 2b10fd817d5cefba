"""`make bench`'s report and the campaign benchmark's arithmetic, on hand-made figures: a report
that no longer renders, or a breakdown that adds up wrong, is found by the suite."""

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import campaign_efficiency, report
from runs.models import Run


def campaign(efficiency: float, stages: dict[str, float], runs: int = 15) -> dict[str, Any]:
    return {
        "configurations": 3, "repetitions": runs // 3, "seconds_each": 30, "scale": 5, "runs": runs, "failed": [],
        "reused": runs - 1, "measured_s": 30 * runs, "wall_s": 30 * runs / efficiency, "efficiency": efficiency,
        "per_run_overhead_s": 30 / efficiency - 30, "outside_the_lab_layer_s": 0.5 * runs,
        "stages": {name: {"median_s": s, "total_s": s * runs, "runs": runs} for name, s in stages.items()},
    }  # fmt: skip


def test_the_campaign_breakdown_takes_the_median_of_each_stage_over_the_runs_that_had_it() -> None:
    runs = [
        Run(environment={"stages": {"storage": 0.3, "load": 1.0, "pgbench with metrics": 30.5}}),
        Run(environment={"stages": {"storage": 0.0, "keep": 6.0, "pgbench with metrics": 30.2}}),
        Run(environment={"stages": {"storage": 0.0, "keep": 8.0, "pgbench with metrics": 30.4}}),
        Run(environment={}),  # failed before its stages were recorded
    ]
    stages = campaign_efficiency.stage_seconds(runs)

    assert stages["storage"] == {"median_s": 0.0, "total_s": 0.3, "runs": 3}
    assert stages["keep"] == {"median_s": 7.0, "total_s": 14.0, "runs": 2}
    assert stages["load"]["runs"] == 1 and stages["pgbench with metrics"]["median_s"] == 30.4


HUNDRED_CHARTS_MS = {
    "rows": 204.0,
    "arrays": 155.0,
    "rows, JSON by PostgreSQL": 69.0,
    "arrays, JSON by PostgreSQL": 33.0,
}


def test_the_report_says_each_figure_against_its_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    machine = {"when": "2026-11-24T18:00:00+00:00", "revision": "abc1234", "machine": "Linux", "cpus": 2}
    where: dict[str, Any] = {"machine": machine | {"python": "3.11.7"}}
    figures: dict[str, dict[str, Any]] = {
        "campaign_efficiency": {
            "reusing": campaign(0.93, {"storage": 0.0, "keep": 0.25, "pgbench with metrics": 30.4}),
            "fresh_database": campaign(0.87, {"storage": 0.29, "load": 1.1}, runs=3),
            "hdd": campaign(0.62, {"keep": 6.5}, runs=3),
        },
        "sample_storage": {
            "data_set": {"runs": 480, "samples_each": 1000},
            "one_chart_ms": {"rows": 1.9, "arrays": 1.6},
            "hundred_charts_ms": HUNDRED_CHARTS_MS,
            "ingest_samples_per_s": {"rows": 11700.0, "arrays": 7700.0},
            "size_mib": {"rows": 68.5, "arrays": 16.3},
        },
    }
    for name, data in figures.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(where | data))
    monkeypatch.setattr(report, "RESULTS", tmp_path)

    page = report.report()

    assert "efficiency **0.93** (target ≥ 0.8: meets)" in page
    assert "| keep | 0.25 | – | 6.50 |" in page  # each stage in each campaign, a dash where it had none
    assert "| outside the lab layer (dispatch, SSH connect, probes, storing; mean) | 0.50 | 0.50 | 0.50 |" in page
    assert "| 100 charts, PostgreSQL builds the JSON, ms | 69.0 | 33.0 |" in page
    assert page.count("_Measured 2026-11-24T18:00:00+00:00 at revision abc1234") == 2
    assert "Live viewers" not in page  # no figures, no section


def test_a_campaign_below_the_target_is_reported_as_missing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = {"reusing": campaign(0.7, {}), "fresh_database": campaign(0.5, {}), "hdd": campaign(0.3, {})}
    where = {"machine": {"when": "now", "revision": "abc1234", "machine": "Linux", "cpus": 2, "python": "3.11"}}
    (tmp_path / "campaign_efficiency.json").write_text(json.dumps(where | slow))
    monkeypatch.setattr(report, "RESULTS", tmp_path)

    assert "efficiency **0.70** (target ≥ 0.8: **misses**)" in report.report()


def test_harness_overhead_is_said_per_disk_against_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk(ratio: float, pairs: int) -> dict[str, Any]:
        cpu = {"benchlab": {"worker": 0.6, "lab tail": 0.0}, "direct": {"worker": 0.1}}
        return {
            "pairs": pairs, "median_ratio": ratio, "min_ratio": ratio - 0.02, "max_ratio": ratio + 0.03,
            "q1_ratio": ratio - 0.01, "q3_ratio": ratio + 0.01, "meets": ratio >= 0.99, "harness_cpu_pct": 0.5,
            "tps_median": {"benchlab": 990.0, "direct": 1000.0}, "cpu_pct_median": cpu,
        }  # fmt: skip

    config = {"workload": "tpcb-like", "scale": 5, "clients": 4, "threads": 2, "duration_s": 20, "filesystem": "ext4"}
    where = {"machine": {"when": "now", "revision": "abc1234", "machine": "Linux", "cpus": 2, "python": "3.11"}}
    crossover = {"ratio": 0.991, "low": 0.962, "high": 1.021, "by_first": {"benchlab": 1.007, "direct": 0.975}}
    balanced = disk(0.985, 6) | {"crossover": crossover, "meets": True, "resolved": False}
    resolved = disk(0.985, 8) | {"crossover": crossover | {"low": 0.993}, "meets": True, "resolved": True}
    disks = {"ram": disk(0.995, 5), "hdd": disk(0.995, 3), "ssd": balanced, "nvme": resolved}
    data = {"configuration": config, "target_ratio": 0.99, "disks": disks}
    (tmp_path / "harness_overhead.json").write_text(json.dumps(where | data))
    monkeypatch.setattr(report, "RESULTS", tmp_path)

    page = report.report()

    ram = "| ram | 5 | 990.0 | 1000.0 | – | – | – | 0.995 | 0.975 – 1.025 | 0.985 – 1.005 | 0.5 | meets, not resolved |"
    assert ram in page
    assert "| hdd | 3 |" in page and page.count("**misses**") == 1  # too few pairs for a verdict
    assert "| ssd | 6 | 990.0 | 1000.0 | 0.991 | 0.962 – 1.021 | 1.007 / 0.975 | 0.985 |" in page
    nvme = next(line for line in page.splitlines() if line.startswith("| nvme |"))
    assert nvme.startswith("| nvme | 8 | 990.0 | 1000.0 | 0.991 | 0.993 – 1.021 |") and nvme.endswith("| 0.5 | meets |")
    assert "| worker | 0.6 | 0.1 | 0.6 | 0.1 |" in page and "| lab vmstat | 0.0 | 0.0 | 0.0 | 0.0 |" in page


def test_the_watch_section_says_detection_and_the_pages_against_their_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = {"machine": {"when": "now", "revision": "abc1234", "machine": "Linux", "cpus": 2, "python": "3.11"}}
    detection = {"series": 1000, "rounds": 365, "total_s": 1.1, "median_ms": 0.44, "p95_ms": 3.98, "steps": 250,
                 "steps_found": 228, "noise_series": 750, "noise_flagged": 0}  # fmt: skip
    pages = {"series page (365 rounds × 3)": {"median_ms": 120.0, "p95_ms": 150.0, "bytes": 285528},
             "series list (21 series)": {"median_ms": 250.0, "p95_ms": 300.0, "bytes": 9112}}  # fmt: skip
    (tmp_path / "changepoints.json").write_text(json.dumps(where | {"detection": detection, "pages": pages}))
    monkeypatch.setattr(report, "RESULTS", tmp_path)

    page = report.report()

    assert "over 1,000 synthetic series of 365 rounds" in page and "1.1 s in all, a median of 0.44 ms" in page
    assert "steps found within 3 rounds 228 of 250, noise-only series flagged 0 of 750" in page
    assert "| series page (365 rounds × 3) | 120.0 | 150.0 | 278.8 | meets |" in page
    assert "| series list (21 series) | 250.0 | 300.0 | 8.9 | **misses** |" in page


def test_the_watch_benchmark_finds_its_steps_and_spares_its_noise() -> None:
    from benchmarks.changepoints import detection

    found = detection(series=8, rounds=60, seed=1)
    assert (found["series"], found["steps"], found["noise_series"]) == (8, 2, 6)
    assert found["steps_found"] == 2 and found["noise_flagged"] == 0
    assert 0 < found["median_ms"] <= found["p95_ms"]
