"""The `benchlab` command line: global options, one subcommand per noun (benchlab_cli.commands),
and each failure's message on stderr with its exit code (benchlab_cli.errors)."""

import argparse
import sys
from collections.abc import Sequence

from benchlab_cli.commands import campaigns, export, hosts, runs
from benchlab_cli.config import resolve_config
from benchlab_cli.errors import EXIT_CODES_HELP, CliError, Exit
from benchlab_cli.http import Api

DESCRIPTION = """benchlab from a shell, through its JSON API.

benchlab's URL and an API token come from --url and --token, else BENCHLAB_URL and BENCHLAB_TOKEN,
else a TOML file (--config, default ~/.config/benchlab/config.toml) with url = "..." and token = "..."."""


def _connection_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    # Given before or after the subcommand. On the subcommands they default to SUPPRESS, so a
    # value given before the subcommand is not overwritten by the subcommand's default.
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--url", default=default, help="benchlab's address, e.g. http://127.0.0.1:8000")
    parser.add_argument("--token", default=default, help="an API token (rather BENCHLAB_TOKEN: not in ps)")
    parser.add_argument("--config", default=default, metavar="PATH", help="the TOML file with url and token")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="print JSON for scripts instead of text")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchlab", description=DESCRIPTION, epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _connection_options(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _connection_options(common, suppress=True)
    nouns = parser.add_subparsers(dest="noun", required=True, metavar="{hosts,runs,campaigns,export}")
    for module in (hosts, runs, campaigns, export):
        module.add_commands(nouns, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # a usage error exits 2, argparse's own
    try:
        api = Api(resolve_config(url=args.url, token=args.token, config_path=args.config))
        return int(args.handler(args, api))
    except CliError as exc:
        print(f"benchlab: {exc}", file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt:
        print("benchlab: interrupted (what was queued goes on)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `benchlab export ... | head`: the reader has what it wanted
        return int(Exit.OK)
