"""`benchlab runs queue --from spec.json` (POST /api/runs/, optionally waiting for its end) and
`benchlab runs show ID`."""

import argparse
from typing import Any

from benchlab_cli.commands.common import add_from_option, add_noun, add_show_command, add_wait_options, read_json_file
from benchlab_cli.errors import Exit
from benchlab_cli.http import Api
from benchlab_cli.output import cell, print_json, say
from benchlab_cli.progress import bar_line, wait_for
from benchlab_cli.verdicts import FINAL_STATES

SHOWN = ("state", "server_host", "device", "filesystem", "driver", "workload", "clients", "duration_s", "tps",
         "steady_tps_mean", "latency_p95_ms", "error")  # fmt: skip


def add_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    runs = add_noun(subparsers, "runs", "queue a run, show one", ("queue", "show"))
    queue = runs.add_parser(
        "queue", parents=[common], help="queue a run from a JSON spec",
        description="Queue a run: the file holds the body POST /api/runs/ takes, e.g. "
        '{"server_host": 1, "device": 2, "pg_install": 3, "filesystem": "ext4", "scale": 10, "clients": 8, '
        '"duration_s": 60}; a field left out takes the queue form\'s default.',
    )  # fmt: skip
    add_from_option(queue, "spec", "the run's spec")
    queue.add_argument("--wait", action="store_true", help="wait until the run has ended; exit 1 unless it is done")
    add_wait_options(queue)
    queue.set_defaults(handler=queue_run)
    add_show_command(runs, common, "show a run", show_run)


def queue_run(args: argparse.Namespace, api: Api) -> int:
    spec = read_json_file(args.spec, "the run spec")
    run = api.post("/api/runs/", spec)
    if not args.json:
        page = api.page_url(f"/runs/{run['id']}/")
        print(f"queued run {run['id']}: {page}")
    if not args.wait:
        if args.json:
            print_json(run)
        return Exit.OK
    run = wait_for(
        lambda: api.get(f"/api/runs/{run['id']}/"),
        lambda r: r["state"] in FINAL_STATES,
        lambda r: bar_line(int(r["state"] in FINAL_STATES), 1, f"run {r['id']} {r['state'].replace('_', ' ')}", None),
        interval_s=args.interval,
        timeout_s=args.timeout,
    )
    if args.json:
        print_json(run)
    else:
        print(run_summary(run))
    if run["state"] != "done":
        say(f"run {run['id']} ended {run['state']}" + (f": {run['error']}" if run.get("error") else ""))
        return Exit.VERDICT
    return Exit.OK


def show_run(args: argparse.Namespace, api: Api) -> int:
    run = api.get(f"/api/runs/{args.id}/")
    if args.json:
        print_json(run)
    else:
        print(run_summary(run))
    return Exit.OK


def run_summary(run: dict[str, Any]) -> str:
    lines = [f"run {run['id']}"]
    lines += [f"  {key}: {cell(run.get(key))}" for key in SHOWN if run.get(key) not in (None, "")]
    return "\n".join(lines)
