"""`benchlab export campaign ID --csv`: a campaign's results as files, the same the web gives.

table: the campaign page's results table (its CSV link), GET /api/campaigns/ID/results-table/;
summary: every metric per configuration with the verdicts, GET /api/comparisons/summary/?campaign=ID;
series: every run's per-second samples, GET /api/comparisons/series/?campaign=ID."""

import argparse
import sys
from pathlib import Path
from typing import Any

from benchlab_cli.commands.common import add_noun
from benchlab_cli.errors import Exit, UsageError
from benchlab_cli.http import Api

WHAT = {
    "table": "/api/campaigns/{id}/results-table/",
    "summary": "/api/comparisons/summary/",
    "series": "/api/comparisons/series/",
}


def add_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    exports = add_noun(subparsers, "export", "a campaign's results as CSV or JSON", ("campaign",))
    campaign = exports.add_parser(
        "campaign", parents=[common], help="a campaign's results table, summary or per-second series",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    campaign.add_argument("id", type=int)
    form = campaign.add_mutually_exclusive_group()
    form.add_argument("--csv", dest="file", action="store_const", const="csv", help="CSV (the default)")
    form.add_argument("--json-file", dest="file", action="store_const", const="json",
                      help="the same rows as JSON (--json does the same)")  # fmt: skip
    campaign.add_argument("--what", choices=tuple(WHAT), default="table", help="which table (default: table)")
    campaign.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of stdout")
    campaign.set_defaults(handler=export_campaign)


def export_campaign(args: argparse.Namespace, api: Api) -> int:
    file = args.file or ("json" if args.json else "csv")
    path = WHAT[args.what].format(id=args.id)
    query = {"file": file} if args.what == "table" else {"campaign": str(args.id), "file": file}
    raw = api.request("GET", path, query=query)  # bytes as served: CSV's CRLF line ends kept
    if args.output:
        try:
            Path(args.output).write_bytes(raw)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    else:
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
    return Exit.OK
