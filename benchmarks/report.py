"""The benchmarks' figures in one markdown page (bench/results/report.md), from the JSON each
benchmark wrote, with the machine and git revision each was measured on and whether it met
its target. `make bench` writes it last; the README quotes it."""

import json
import sys
from collections.abc import Callable
from typing import Any

from benchmarks.machine import RESULTS

Section = Callable[[dict[str, Any]], list[str]]


def _page_speed(data: dict[str, Any]) -> list[str]:
    rows = ["| page | median ms | p95 ms | KiB | target < 200 ms |", "|---|---:|---:|---:|---|"]
    for name, f in data["pages"].items():
        verdict = "meets" if f["median_ms"] < 200 else "**misses**"
        rows.append(f"| {name} | {f['median_ms']:.1f} | {f['p95_ms']:.1f} | {f['bytes'] / 1024:.1f} | {verdict} |")
    return rows


def _live_viewers(data: dict[str, Any]) -> list[str]:
    latency, web = data["latency_ms"], data["web_process"]
    meets = data["missed_total"] == 0 and latency["p95"] < 250
    return [
        f"{data['viewers']} viewers of one run, {data['samples']} samples at {data['rate_per_s']:g}/s: "
        f"{data['missed_total']} missed; publish → received p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms, "
        f"p99 {latency['p99']:.1f} ms (target p95 < 250 ms, none missed: {'meets' if meets else '**misses**'}).",
        "",
        f"Web process while serving: {web['cpu_pct_of_one_core']:.1f} % of one core, {web['rss_mib']:.0f} MiB "
        f"resident, {web['threads_serving']:.0f} threads ({web['threads_idle']:.0f} idle).",
    ]


def _live_latency(data: dict[str, Any]) -> list[str]:
    latency = data["latency_ms"]
    meets = latency["p95"] < 250 and data["samples"] >= 300
    return [
        f"{data['runs']} real runs at once on the virtual lab, {data['samples']} samples: pgbench's progress line → "
        f"the page's event stream p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms, p99 {latency['p99']:.1f} "
        f"ms (target p95 < 250 ms: {'meets' if meets else '**misses**'}).",
    ]


SECTIONS: dict[str, tuple[str, Section]] = {
    "page_speed": ("Page speed (server time, 100 runs × 1,000 samples; 10,000 runs; a 1-hour run)", _page_speed),
    "live_viewers": ("Live viewers", _live_viewers),
    "live_latency": ("Live latency, end to end", _live_latency),
}


def report() -> str:
    lines = [
        "# benchlab measures itself",
        "",
        "Written by `make bench` (benchmarks/report.py) from bench/results/*.json.",
    ]
    for name, (title, section) in SECTIONS.items():
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        where = data["machine"]
        lines += ["", f"## {title}", "", *section(data), "",
                  f"_Measured {where['when']} at revision {where['revision']} on {where['machine']}, "
                  f"{where['cpus']} CPUs, Python {where['python']}._"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    (RESULTS / "report.md").write_text(report())
    print(f"report: {RESULTS / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
