"""Reads for the API tokens page: one's own tokens (an admin's: everybody's), newest first, and
the one token a revoke names. A page of them is two queries (the count, the rows with their
owners and names).

knox records no last use of a token, so none is shown. A token knox found expired when it was
used is deleted by knox itself; one not used since it expired is listed as expired until then.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils import timezone
from knox.models import AuthToken

from runs.accounts.token_rules import oversees_tokens
from runs.common.paging import page_or_last

TOKENS_PER_PAGE = 50


@dataclass(frozen=True)
class TokenRow:
    token: AuthToken
    name: str  # "" for a token made without one (in the admin, or before names existed)
    expired: bool

    @property
    def owner(self) -> str:
        return self.token.user.get_username()


def _visible(user: Any) -> QuerySet[AuthToken]:
    tokens = AuthToken.objects.select_related("user", "benchlab_name")
    return tokens if oversees_tokens(user) else tokens.filter(user_id=user.pk)


def token_page(user: Any, number: int) -> tuple[Page, str | None, list[TokenRow]]:
    """Page `number` of the tokens `user` may see (past the end: the last page and a notice saying
    so: runs.common.paging.page_or_last) and its rows."""
    paginator = Paginator(_visible(user).order_by("-created", "digest"), TOKENS_PER_PAGE)
    page, past_the_end = page_or_last(paginator, number, "tokens")
    now = timezone.now()
    return page, past_the_end, [_row(token, now) for token in page.object_list]


def token_of(user: Any, digest: str) -> TokenRow | None:
    """The token with this digest if `user` may see it (its owner, an admin), else None: another's
    token is not found, as an unknown one."""
    token = _visible(user).filter(digest=digest).first()
    return _row(token, timezone.now()) if token else None


def _row(token: AuthToken, now: datetime) -> TokenRow:
    named = getattr(token, "benchlab_name", None)
    return TokenRow(token, named.name if named else "", token.expiry is not None and token.expiry <= now)
