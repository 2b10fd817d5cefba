"""What a new API token may be asked for, checked alike by the page's form, the service and
`manage.py token_create`; each refusal names what is allowed.

Pure: no query, no write.
"""

import re
from typing import Any

from runs.models import TOKEN_NAME_MAX

EXPIRY_DAYS_MIN, EXPIRY_DAYS_MAX = 1, 365
# The admin role oversees everyone's work (runs.common.roles): the permission that lets it cancel
# anybody's run also lets it see and revoke anybody's token, as with share links.
OVERSEE_PERMISSION = "runs.cancel_any_run"
_DAYS = re.compile(r"[0-9]{1,3}")  # ASCII digits only: "²".isdigit() is true


class TokenRefused(ValueError):
    """The token cannot be made or revoked as asked; str() says why, for the user to read."""


def oversees_tokens(user: Any) -> bool:
    """Whether `user` sees and may revoke everybody's tokens (the admin role, superusers)."""
    return bool(user.is_superuser or user.has_perm(OVERSEE_PERMISSION))


def token_name(raw: str) -> str:
    """The name as stored: one line of 1 to TOKEN_NAME_MAX printable characters, trimmed."""
    name = raw.strip()
    if not name:
        raise TokenRefused(f"A token needs a name (1 to {TOKEN_NAME_MAX} characters), to tell it from your others.")
    if len(name) > TOKEN_NAME_MAX:
        raise TokenRefused(f"A token's name is at most {TOKEN_NAME_MAX} characters, not {len(name)}.")
    if not name.isprintable():
        raise TokenRefused("A token's name is one line of text, without line breaks, tabs or control characters.")
    return name


def expiry_days(raw: str) -> int | None:
    """Days until the token stops working, or None (blank: it never expires)."""
    text = raw.strip()
    if not text:
        return None
    if not _DAYS.fullmatch(text) or not EXPIRY_DAYS_MIN <= int(text) <= EXPIRY_DAYS_MAX:
        shown = repr(text if len(text) <= 20 else text[:20] + "…")
        raise TokenRefused(
            f"The expiry is a whole number of days from {EXPIRY_DAYS_MIN} to {EXPIRY_DAYS_MAX}, "
            f"or blank for a token that never expires; not {shown}."
        )
    return int(text)
