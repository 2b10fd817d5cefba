"""The API tokens page: every signed-in user makes named tokens, lists them and revokes them; an
admin sees and revokes everybody's (runs.accounts).

A new token's secret is shown in the answer to the POST that made it, and nowhere else: it is
not kept in the session for a redirect (the session table would hold a usable token), and the
answer is not cached. Reloading that answer asks the browser to send the form again: the form's
one-time key (TokenForm.once), remembered in the session once used, makes that a notice
("this form was sent already") and not a second token. A script that posts without the key
makes a token each time.
"""

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from runs.accounts.selectors import token_of, token_page
from runs.accounts.services.tokens import token_create, token_revoke
from runs.accounts.token_rules import TokenRefused, oversees_tokens
from runs.common.paging import asked_page
from runs.common.params import BadParameter
from runs.forms.tokens import TokenForm
from runs.views.refusals import refused


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """The list and the form; a POST makes a token and shows its secret once, above the list."""
    form = TokenForm(request.POST if request.method == "POST" else None)
    if request.method != "POST":
        return _page(request, form)
    if not form.is_valid():
        return _page(request, form, status=400)  # each mistake beside its field; nothing made
    if _sent_before(request, form.cleaned_data["once"]):
        return _page(request, TokenForm(), status=409, resent=True)
    try:
        token, secret = token_create(
            user=request.user,
            name=form.cleaned_data["name"],
            expires_days=form.cleaned_data["expires_days"],
            by=request.user,
            request=request,
        )
    except TokenRefused as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=400)
    _remember_sent(request, form.cleaned_data["once"])
    new = {"name": form.cleaned_data["name"], "secret": secret, "expiry": token.expiry}
    return _page(request, TokenForm(), new=new)


SENT_FORMS = "tokens.sent_forms"  # the session's list of the token forms' keys already used
SENT_FORMS_KEPT = 20


def _sent_before(request: HttpRequest, once: str) -> bool:
    return bool(once) and once in request.session.get(SENT_FORMS, [])


def _remember_sent(request: HttpRequest, once: str) -> None:
    if once:
        request.session[SENT_FORMS] = [*request.session.get(SENT_FORMS, []), once][-SENT_FORMS_KEPT:]


def _page(
    request: HttpRequest,
    form: TokenForm,
    status: int = 200,
    new: dict[str, Any] | None = None,
    resent: bool = False,
) -> HttpResponse:
    try:
        number = asked_page(request.GET.get("page"))
    except BadParameter as exc:
        return refused(request, str(exc))
    page, past_the_end, rows = token_page(request.user, number)
    context = {
        "form": form,
        "page": page,
        "past_the_end": past_the_end,
        "rows": rows,
        "everyone": oversees_tokens(request.user),
        "new": new,
        "resent": resent,
    }
    return render(request, "runs/token_list.html", context, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
def token_revoke_view(request: HttpRequest, digest: str) -> HttpResponse:
    """GET: the confirmation, naming the token as it is now; POST: revoke it. Somebody else's
    token is not found (404), whatever the asker's role, unless the asker is an admin."""
    row = token_of(request.user, digest)
    if row is None:
        raise Http404("No such API token of yours: revoked already, expired and removed, or never yours.")
    if request.method != "POST":
        return render(request, "runs/token_revoke.html", {"row": row})
    try:
        token_revoke(token=row.token, by=request.user, request=request)
    except TokenRefused as exc:
        return refused(request, str(exc), status=403)
    label = f"“{row.name}”" if row.name else "without a name"
    messages.success(request, f"API token {label} ({row.token.token_key}…) of {row.owner} revoked: it no longer works.")
    return redirect("tokens")
