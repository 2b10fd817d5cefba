"""Make an API token for a user, for scripts that set up a lab:

    TOKEN=$(manage.py token_create --user ci --name "CI on build-7" --expires-days 90)

Standard output is the token and nothing else (a line), so it can be captured; what went wrong
goes to standard error, with a non-zero exit, and then no token is made. Audited as benchlab's
own (a command has no signed-in user), naming the command.
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.accounts.services.tokens import token_create
from runs.accounts.token_rules import EXPIRY_DAYS_MAX, EXPIRY_DAYS_MIN, TokenRefused


class Command(BaseCommand):
    help = "Make a named API token for a user and print it (only it) on standard output."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the user name the token acts as")
        parser.add_argument("--name", required=True, help="what the token is for (shown on the tokens page)")
        parser.add_argument(
            "--expires-days",
            default="",
            help=f"days until it stops working, {EXPIRY_DAYS_MIN} to {EXPIRY_DAYS_MAX}; left out: never",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["user"]
        # A NUL byte is no user name, and PostgreSQL refuses it in a query.
        user = get_user_model().objects.filter(username=name).first() if "\x00" not in name else None
        if user is None:
            raise CommandError(f"There is no user {options['user']!r}: no token was made.")
        try:
            _, secret = token_create(
                user=user, name=options["name"], expires_days=options["expires_days"], via=", by manage.py token_create"
            )
        except TokenRefused as exc:
            raise CommandError(f"{exc} No token was made.") from exc
        self.stdout.write(secret)
