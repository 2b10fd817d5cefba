"""Detect and store the change points of one series, or of every recurring one (runs.watch.services.detect):
what the run-end hook does after each round, for series whose rounds ended before it existed. What
it finds is stored and listed on the regressions page; subscribers are told only with --tell (a
backfill of old rounds is not news)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.watch.selectors import recurring_keys
from runs.watch.series import key_checked
from runs.watch.services.detect import watch_detect


class Command(BaseCommand):
    help = "Detect and store change points: of the series given by key, or --all recurring series."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("keys", nargs="*", help="series keys (16 hexadecimal digits, as in /series/<key>/)")
        parser.add_argument("--all", action="store_true", help="every series with two rounds or more")
        parser.add_argument(
            "--tell", action="store_true", help="tell the schedules' subscribers of the new recent change points"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["keys"]) == bool(options["all"]):
            raise CommandError("give series keys or --all (not both, not neither)")
        try:
            keys = recurring_keys() if options["all"] else [key_checked(key) for key in options["keys"]]
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        new = 0
        for key in keys:
            found = watch_detect(key, tell=options["tell"])
            new += len(found.new)
            self.stdout.write(f"{key}: {found.stored} change points, {len(found.new)} new")
        self.stdout.write(f"{len(keys)} series, {new} new change points")
