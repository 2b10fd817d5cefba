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


def _ingest(data: dict[str, Any]) -> list[str]:
    rows = [
        "| runs × seconds a second each | offered /s | stored /s | forwarded /s | lost | lag p50 ms | p95 | p99 | max "
        "| worker CPU ms a sample | machine busy (before) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in data["steps"]:
        lag = s["lag_ms"] or dict.fromkeys(("p50", "p95", "p99", "max"), float("nan"))
        again = " (again)" if s.get("attempt", 1) > 1 else ""
        rows.append(
            f"| {s['runs']} × {s['rate_per_run']:g}{again} | {s['offered_per_s']:,.0f} | {s['stored_per_s']:,.0f} | "
            f"{s['forwarded_per_s']:,.0f} | {s['lost']:,} | {lag['p50']:.0f} | {lag['p95']:.0f} | {lag['p99']:.0f} | "
            f"{lag['max']:.0f} | {s['worker_cpu_ms_per_sample']:.2f} | {s['machine_busy_pct']:.0f} % "
            f"({s['busy_before_pct']:.0f} %) |"
        )
    best, target = data["sustained_per_s"], data["target_per_s"]
    return [
        "Simulated runs, a process each, hand pgbench progress lines to the worker's own handler (stored in "
        "PostgreSQL, published to Redis, read back as a live page reads them); the offered rate doubles each "
        f"{data['step_seconds']:g} s step, a missed rate is tried again. {best:,.0f} samples/s with none lost and none "
        f"forwarded later than {data['max_lag_s']:g} s (target ≥ {target:,.0f}/s: "
        f"{'meets' if best >= target else '**misses**'}).",
        "",
        *rows,
    ]


# What benchlab's processes are, and the rest, in the order the CPU table shows them.
HARNESS_CPU_ROWS = ("worker", "benchlab database", "lab sshd", "lab tail", "lab iostat", "lab vmstat", "lab other",
                    "lab pgbench", "lab postgres", "machine, everything else")  # fmt: skip


def _harness_overhead(data: dict[str, Any]) -> list[str]:
    config, disks = data["configuration"], data["disks"]
    lines = [
        f"pgbench {config['workload']}, scale {config['scale']}, {config['clients']} clients, {config['threads']} "
        f"threads, {config['duration_s']} s on fresh {config['filesystem']} and a freshly loaded database each time: "
        "through benchlab (iostat and vmstat on, progress followed live, every transaction logged) and the same "
        "command by hand over plain ssh, in interleaved pairs; pgbench's own tps, benchlab / direct "
        f"(target ≥ {data['target_ratio']}). The verdict reads the crossover estimate, which takes out the "
        "advantage of going first in a pair: the mean log ratio of the pairs benchlab ran first and that of the "
        "pairs the direct side ran first, averaged, with its 95 % interval; resolved when the whole interval "
        "meets the target (benchmarks/pairs.py).",
        "",
        "| disk | pairs | benchlab tps | direct tps | ratio, order taken out | 95 % interval "
        "| benchlab first / direct first | median ratio | min – max | IQR | benchlab's CPU, % of a core | target |",
        "|---|---:|---:|---:|---:|---|---|---:|---|---|---:|---|",
    ]
    for name, d in disks.items():
        lines.append(
            f"| {name} | {d['pairs']} | {d['tps_median']['benchlab']:.1f} | {d['tps_median']['direct']:.1f} | "
            f"{_crossover_cells(d)} | {d['median_ratio']:.3f} | {d['min_ratio']:.3f} – {d['max_ratio']:.3f} | "
            f"{d['q1_ratio']:.3f} – {d['q3_ratio']:.3f} | {d['harness_cpu_pct']:.1f} | {_harness_verdict(d)} |"
        )
    sides = [(name, side) for name in disks for side in ("benchlab", "direct")]
    lines += [
        "",
        'CPU while pgbench ran, % of one core (medians over the pairs); "lab" is the lab host, "machine, '
        'everything else" what else ran on this machine meanwhile (other labs and tests, the kernel):',
        "",
        "| process | " + " | ".join(f"{name} {side}" for name, side in sides) + " |",
        "|---|" + "---:|" * len(sides),
    ]
    for row in HARNESS_CPU_ROWS:
        shown = [f"{disks[name]['cpu_pct_median'][side].get(row, 0.0):.1f}" for name, side in sides]
        lines.append(f"| {row} | {' | '.join(shown)} |")
    return lines


def _crossover_cells(disk: dict[str, Any]) -> str:
    """The crossover estimate, its interval and each order's ratio; dashes without them."""
    crossover = disk.get("crossover")
    if crossover is None:
        return "– | – | –"
    by_first = crossover["by_first"]
    return (
        f"{crossover['ratio']:.3f} | {crossover['low']:.3f} – {crossover['high']:.3f} | "
        f"{by_first['benchlab']:.3f} / {by_first['direct']:.3f}"
    )


def _harness_verdict(disk: dict[str, Any]) -> str:
    if not disk["meets"] or disk["pairs"] < 5:
        return "**misses**"
    return "meets" if disk.get("resolved") else "meets, not resolved"


def _live_viewers(data: dict[str, Any]) -> list[str]:
    latency, web = data["latency_ms"], data["web_process"]
    extra_threads = web["threads_serving"] - web["threads_idle"]
    meets = data["missed_total"] == 0 and latency["p95"] < 250 and extra_threads < 5
    return [
        f"{data['viewers']} viewers of one run, {data['samples']} samples at {data['rate_per_s']:g}/s: "
        f"{data['missed_total']} missed; publish → received p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms, "
        f"p99 {latency['p99']:.1f} ms; {extra_threads:+.0f} threads serving against idle (target p95 < 250 ms, none "
        f"missed, fewer than 5 more threads: {'meets' if meets else '**misses**'}).",
        "",
        f"Web process while serving: {web['cpu_pct_of_one_core']:.1f} % of one core, {web['rss_mib']:.0f} MiB "
        f"resident ({web['rss_mib_idle']:.0f} idle), {web['threads_serving']:.0f} threads "
        f"({web['threads_idle']:.0f} idle), {web['redis_connections_serving']:.0f} Redis connections (one a viewer) "
        f"and {web['database_connections_serving']:.0f} to PostgreSQL; once the viewers left, "
        f"{web['redis_connections_after']:.0f} Redis connections.",
    ]


def _live_latency(data: dict[str, Any]) -> list[str]:
    latency = data["latency_ms"]
    meets = latency["p95"] < 250 and data["samples"] >= 300
    return [
        f"{data['runs']} real runs at once on the virtual lab, {data['samples']} samples: pgbench's progress line → "
        f"the page's event stream p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms, p99 {latency['p99']:.1f} "
        f"ms (target p95 < 250 ms: {'meets' if meets else '**misses**'}).",
    ]


def _sample_storage(data: dict[str, Any]) -> list[str]:
    one, hundred = data["one_chart_ms"], data["hundred_charts_ms"]
    ingest, size = data["ingest_samples_per_s"], data["size_mib"]
    return [
        f"{data['data_set']['runs']} runs × {data['data_set']['samples_each']} samples, one row per run and second "
        "against one row per run holding arrays (medians of interleaved rounds):",
        "",
        "| measure | rows | arrays |",
        "|---|---:|---:|",
        f"| one chart, ms | {one['rows']:.2f} | {one['arrays']:.2f} |",
        f"| 100 charts, Python builds the JSON, ms | {hundred['rows']:.1f} | {hundred['arrays']:.1f} |",
        f"| 100 charts, PostgreSQL builds the JSON, ms | {hundred['rows, JSON by PostgreSQL']:.1f} | "
        f"{hundred['arrays, JSON by PostgreSQL']:.1f} |",
        f"| live ingest, samples/s | {ingest['rows']:,.0f} | {ingest['arrays']:,.0f} |",
        f"| size on disk, MiB | {size['rows']:.1f} | {size['arrays']:.1f} |",
    ]


# The lab layer's stages in the order a run goes through them (runs/lab/benchmark/run.py).
STAGES = ("hosts", "kept setup checked", "storage", "cluster", "load", "state before measuring", "before pgbench",
          "pgbench with metrics", "collect", "keep", "cleanup")  # fmt: skip


def _campaign_efficiency(data: dict[str, Any]) -> list[str]:
    reusing, fresh, hdd = data["reusing"], data["fresh_database"], data["hdd"]
    meets = reusing["efficiency"] >= 0.8 and not reusing["failed"]
    lines = [
        f"{reusing['configurations']} configurations × {reusing['repetitions']} repetitions × "
        f"{reusing['seconds_each']} s on the virtual lab's RAM disk (scale {reusing['scale']}), storage and database "
        f"reused ({reusing['reused']} of {reusing['runs']} runs): {reusing['measured_s']} s measured in "
        f"{reusing['wall_s']:.0f} s, efficiency **{reusing['efficiency']:.2f}** (target ≥ 0.8: "
        f"{'meets' if meets else '**misses**'}), {reusing['per_run_overhead_s']:.1f} s overhead a run.",
        "",
        f"For contrast, one round each: a fresh database per run, efficiency {fresh['efficiency']:.2f} "
        f"({fresh['per_run_overhead_s']:.1f} s overhead a run); reusing on the HDD-like disk, {hdd['efficiency']:.2f} "
        f"({hdd['per_run_overhead_s']:.1f} s a run; its first run makes the filesystem and loads the database).",
        "",
        "| where a run's time goes (median s) | RAM, reusing | RAM, fresh database | HDD-like, reusing |",
        "|---|---:|---:|---:|",
    ]
    campaigns = (reusing, fresh, hdd)
    for stage in STAGES:
        shown = [f"{c['stages'][stage]['median_s']:.2f}" if stage in c["stages"] else "–" for c in campaigns]
        lines.append(f"| {stage} | {' | '.join(shown)} |")
    outside = " | ".join(f"{c['outside_the_lab_layer_s'] / max(c['runs'], 1):.2f}" for c in campaigns)
    lines.append(f"| outside the lab layer (dispatch, SSH connect, probes, storing; mean) | {outside} |")
    return lines


def _cleanup_sweep(data: dict[str, Any]) -> list[str]:
    old, new, ratio = data["sides"]["old"], data["sides"]["new"], data["ratio"]
    lines = [
        f"A mount-option sweep ({', '.join(o or '(default)' for o in data['sweep'])}; {data['seconds_each']} s each, "
        f"scale {data['scale']}) on the HDD-like disk, through the lab layer, {ratio['pairs']} interleaved pairs: "
        f"new/old efficiency median **{ratio['median_ratio']:.2f}** (min {ratio['min_ratio']:.2f}, max "
        f"{ratio['max_ratio']:.2f}; target ≥ {ratio['target_ratio']}).",
        "",
        "| median | old (stop -m fast, no CHECKPOINT/settle) | new (CHECKPOINT + settle, stop -m immediate) |",
        "|---|---:|---:|",
    ]
    rows = (("efficiency", "efficiency_median"), ("a run's wall time (s)", "run_wall_median_s"),
            ("cleanup (s)", "cleanup_median_s"), ("state before measuring (s)", "state_before_measuring_median_s"),
            ("sectors written after a cleanup (max)", "sectors_written_after_cleanup_max"))  # fmt: skip
    for label, key in rows:
        lines.append(
            f"| {label} | {old[key] if old[key] is not None else '–'} | {new[key] if new[key] is not None else '–'} |"
        )
    return lines


def _changepoints(data: dict[str, Any]) -> list[str]:
    found = data["detection"]
    lines = [
        f"Change-point detection over {found['series']:,} synthetic series of {found['rounds']} rounds (3 % noise, "
        f"a quarter with a +5 % step): {found['total_s']:.1f} s in all, a median of {found['median_ms']:.2f} ms a "
        f"series (p95 {found['p95_ms']:.2f} ms); steps found within 3 rounds {found['steps_found']} of "
        f"{found['steps']}, noise-only series flagged {found['noise_flagged']} of {found['noise_series']}.",
        "",
    ]
    return lines + _page_speed(data)


SECTIONS: dict[str, tuple[str, Section]] = {
    "sample_storage": ("How per-second samples are stored", _sample_storage),
    "campaign_efficiency": ("Campaign efficiency (measured seconds / wall time)", _campaign_efficiency),
    "cleanup_sweep": ("A mount-option sweep's cleanup on the HDD-like disk (old / new)", _cleanup_sweep),
    "page_speed": ("Page speed (server time, 100 runs × 1,000 samples; 10,000 runs; a 1-hour run)", _page_speed),
    "changepoints": ("The regression watch: change points, and a 365-round series' page", _changepoints),
    "harness_overhead": ("Harness overhead (benchlab / direct over ssh)", _harness_overhead),
    "ingest": ("Ingest: samples stored and forwarded", _ingest),
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
