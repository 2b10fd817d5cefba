"""`benchlab hosts`: the lab's hosts, as the inventory has them."""

import argparse
from typing import Any

from benchlab_cli.errors import Exit
from benchlab_cli.http import Api
from benchlab_cli.output import print_json, size, table

COLUMNS = ("id", "name", "address", "enabled", "serves_postgres", "runs_clients", "cpu_cores", "memory")


def add_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser("hosts", parents=[common], help="list the lab's hosts",
                                   description="The lab's hosts (GET /api/hosts/).")  # fmt: skip
    parser.set_defaults(handler=hosts)


def hosts(args: argparse.Namespace, api: Api) -> int:
    found = api.get_all("/api/hosts/")
    if args.json:
        print_json(found)
    else:
        print(hosts_table(found))
    return Exit.OK


def hosts_table(found: list[dict[str, Any]]) -> str:
    rows = [
        [h["id"], h["name"], h["address"], h["enabled"], h["serves_postgres"], h["runs_clients"], h["cpu_cores"],
         size(h["memory_bytes"])]
        for h in found
    ]  # fmt: skip
    return table(COLUMNS, rows) if rows else "no hosts"
