"""What the nouns' commands share: reading a JSON file a command takes, and the wait options."""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchlab_cli.errors import UsageError

DEFAULT_INTERVAL_S = 2.0


def read_json_file(name: str, what: str) -> dict[str, Any]:
    """The JSON object in file `name` ("-": stdin); a missing file, bad JSON or anything but an
    object is a usage error naming the file and, for bad JSON, the line."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {name}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what} {name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{what} {name} must hold a JSON object ({{...}}), not a {type(data).__name__}")
    return data


def add_noun(subparsers: Any, name: str, help: str, actions: tuple[str, ...]) -> Any:
    """`benchlab <name> <action> ...`: the noun's own subcommands, one of them required."""
    noun = subparsers.add_parser(name, help=help)
    return noun.add_subparsers(dest="action", required=True, metavar="{" + ",".join(actions) + "}")


def add_from_option(parser: argparse.ArgumentParser, dest: str, what: str) -> None:
    parser.add_argument("--from", dest=dest, required=True, metavar="FILE", help=f"{what} (JSON; - for stdin)")


def add_show_command(
    subparsers: Any, common: argparse.ArgumentParser, help: str, handler: Any
) -> argparse.ArgumentParser:
    """`<noun> show ID`."""
    show: argparse.ArgumentParser = subparsers.add_parser("show", parents=[common], help=help)
    show.add_argument("id", type=int)
    show.set_defaults(handler=handler)
    return show


def add_wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                        help="with --wait: give up after this long (exit 5); default: no limit")  # fmt: skip
    parser.add_argument("--interval", type=positive_seconds, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
                        help=f"with --wait: seconds between polls (default {DEFAULT_INTERVAL_S:g})")  # fmt: skip


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < 10**7:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds above 0")
    return value
