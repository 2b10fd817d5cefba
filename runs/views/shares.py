"""Share links: making one (from a run's, a campaign's or a comparison's page), the list of
one's links (an admin's: everybody's) with revoke, and the shared pages themselves.

A shared page, at /s/<token>/, is the ordinary page in its shared mode: no controls, no links
to anything but itself, no addresses or paths. It is open without an account, kept out of
search engines, and never sends its URL (the token) on as a Referer. A revoked, expired or
unknown token, and any path under a token that its kind does not have, answer the same 404.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required, permission_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django.views.defaults import page_not_found

from runs.bench.selectors.run_page import run_chart_data, run_with_details
from runs.common.paging import asked_page, page_or_last
from runs.common.params import BadParameter, parse_choice, parse_id, parse_whole_number
from runs.compare.query import PARAMETERS, ComparisonQuery
from runs.compare.services.shares import (
    MAX_EXPIRY,
    RevokeRefused,
    ShareRefused,
    oversees_shares,
    share_create,
    share_resolve,
    share_revoke,
    share_revoke_refusal,
)
from runs.method.selectors import run_method
from runs.models import Campaign, Run, ShareKind, ShareLink
from runs.views.campaigns import campaign_context
from runs.views.compare import (
    ComparisonUrls,
    comparison_data_response,
    comparison_export_response,
    render_comparison,
)
from runs.views.refusals import refused
from runs.views.runs import run_cancellation

SHARES_PER_PAGE = 50
NEW_SHARE = "benchlab_new_share"  # session key: the link just made, until shown

# What a shared run page may show of the environment a run recorded: everything else (host
# addresses and hostnames, device paths and nodes, serials, commands with their paths, the
# probe's lists of disks and installs) is left out before the template sees it.
SHARED_FACTS = {
    "host": ("name", "cpu_model", "cpu_cores", "memory_bytes", "distribution", "kernel"),
    "client": ("name", "cpu_model", "cpu_cores", "memory_bytes", "kernel"),
    "device": ("name", "kind", "model", "capacity_bytes"),
    "filesystem": ("type", "mount_options_requested", "mount_options"),
    "postgresql": ("version", "block_size", "wal_block_size"),
    "pgbench": ("version", "host"),
    "method": ("checkpoints",),  # issue 32: counts and times, marked on the charts
}
ADDRESS_SETTINGS = {"listen_addresses"}


# ---- making, listing and revoking links (signed-in users) ----


@require_POST
@permission_required("runs.view_host", raise_exception=True)
def share_new(request: HttpRequest) -> HttpResponse:
    """Make a link, then show it once in full on the list of one's links."""
    try:
        kind = parse_choice(request.POST.get("kind", ""), "kind", ShareKind.values)
        link, token = share_create(
            kind=kind,
            target=_target(kind, request),
            by=request.user,
            expires_at=_expiry(request.POST.get("expires_days", "")),
            title=request.POST.get("title", ""),
            request=request,
        )
    except (BadParameter, ShareRefused) as exc:
        return refused(request, str(exc))
    # Shown once by the list the browser is sent to (a reload then makes no second link); the
    # session holds it only until that page is read.
    request.session[NEW_SHARE] = {"id": link.pk, "url": request.build_absolute_uri(reverse("shared", args=[token]))}
    return redirect("shares")


def _target(kind: str, request: HttpRequest) -> Run | Campaign | ComparisonQuery:
    """The run, the campaign, or the comparison (the page's own query fields) the form names."""
    if kind == ShareKind.COMPARISON:
        return ComparisonQuery.from_params(
            {key: ",".join(request.POST.getlist(key)) for key in PARAMETERS if key in request.POST}
        ).shareable()
    model: type[Run] | type[Campaign] = Run if kind == ShareKind.RUN else Campaign
    pk = parse_id(request.POST.get("target", ""), f"target (the {kind}'s id)")
    target = model.objects.filter(pk=pk).first()
    if target is None:
        raise BadParameter(f"there is no {kind} {pk}")
    return target


def _expiry(raw: str) -> datetime | None:
    """Days from now, or never (left empty)."""
    if not raw.strip():
        return None
    days = parse_whole_number(
        raw.strip(), "expires_days (days until the link expires, or empty: never)", 1, MAX_EXPIRY.days
    )
    return timezone.now() + timedelta(days=days)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def share_list(request: HttpRequest) -> HttpResponse:
    new = request.session.pop(NEW_SHARE, None)
    link = ShareLink.objects.filter(pk=new["id"], created_by_id=request.user.pk).first() if new else None
    return _share_list_page(request, new=(link, new["url"]) if link and new else None)


@dataclass(frozen=True)
class ShareRow:
    link: ShareLink
    state: str  # live, expired or revoked
    target_url: str  # the shared object's own page (for signed-in users)


def _share_list_page(request: HttpRequest, new: tuple[ShareLink, str] | None = None) -> HttpResponse:
    everyone = oversees_shares(request.user)
    links = ShareLink.objects.select_related("created_by", "revoked_by")
    if not everyone:
        links = links.filter(created_by_id=request.user.pk)
    try:
        number = asked_page(request.GET.get("page"))
    except BadParameter as exc:
        return refused(request, str(exc))
    page, past_the_end = page_or_last(Paginator(links, SHARES_PER_PAGE), number, "share links")
    now = timezone.now()
    context = {
        "page": page,
        "past_the_end": past_the_end,
        "rows": [ShareRow(link, _state(link, now), _target_url(link)) for link in page.object_list],
        "everyone": everyone,
        "new": new,
    }
    return render(request, "runs/share_list.html", context)


def _state(link: ShareLink, now: datetime) -> str:
    if link.revoked_at is not None:
        return "revoked"
    return "live" if link.is_live(now) else "expired"


def _target_url(link: ShareLink) -> str:
    if link.kind == ShareKind.RUN:
        return reverse("run-detail", args=[link.run_id])
    if link.kind == ShareKind.CAMPAIGN:
        return reverse("campaign-detail", args=[link.campaign_id])
    return reverse("compare") + "?" + urlencode({"runs": ",".join(map(str, link.run_ids)), **link.options})


@require_http_methods(["GET", "HEAD", "POST"])
def share_revoke_view(request: HttpRequest, share_id: int) -> HttpResponse:
    """GET: the confirmation, saying what the link shows and how it has been used as it is now;
    POST: revoke it. Its owner, or an admin (others get 403 for both, whatever their role)."""
    link = get_object_or_404(ShareLink.objects.select_related("created_by", "revoked_by"), pk=share_id)
    if request.method != "POST":
        if refusal := share_revoke_refusal(link, request.user):
            return refused(request, refusal, status=403)
        row = ShareRow(link, _state(link, timezone.now()), _target_url(link))
        return render(request, "runs/share_revoke.html", {"row": row})
    try:
        share_revoke(link=link, by=request.user, request=request)
    except RevokeRefused as exc:
        return refused(request, str(exc), status=403)
    messages.success(request, f"Share link {link.pk} ({link.target_label}) revoked: it now answers “not found”.")
    return redirect("shares")


# ---- the shared pages (anyone with the token) ----

SharedView = Callable[..., HttpResponseBase]


def shared(view: SharedView) -> SharedView:
    """A page under a share link: open without an account, read-only, not indexed, its URL
    never sent on as a Referer nor kept by caches; a missing one is the plain 404 page."""

    @login_not_required
    @require_safe
    @wraps(view)
    def page(request: HttpRequest, token: str, **kwargs: Any) -> HttpResponseBase:
        try:
            response = view(request, token, **kwargs)
        except Http404 as exc:
            response = page_not_found(request, exc)
        response["X-Robots-Tag"] = "noindex, nofollow"
        response["Referrer-Policy"] = "no-referrer"
        response["Cache-Control"] = "no-store"
        return response

    return page


def _live(token: str, kinds: tuple[str, ...], *, count_view: bool = False) -> ShareLink:
    link = share_resolve(token, count_view=count_view)
    if link is None or link.kind not in kinds:
        raise Http404("no such share link")
    return link


def _run_of(link: ShareLink) -> Run:
    if link.run is None:  # the table's constraint gives a run link its run: never, but 404 then
        raise Http404("no such share link")
    return link.run


def _campaign_of(link: ShareLink) -> Campaign:
    if link.campaign is None:  # as for a run
        raise Http404("no such share link")
    return link.campaign


@shared
def shared_page(request: HttpRequest, token: str) -> HttpResponse:
    link = _live(token, tuple(ShareKind.values), count_view=request.method == "GET")
    if link.kind == ShareKind.RUN:
        return _shared_run(request, link)
    if link.kind == ShareKind.CAMPAIGN:
        return _shared_campaign(request, link, token)
    return _shared_comparison(request, link, _comparison_urls(token, ShareKind.COMPARISON), report=False)


def _shared_run(request: HttpRequest, link: ShareLink) -> HttpResponse:
    run = run_with_details(_run_of(link).pk)
    method = run_method(run)  # from the whole environment, before the shared page's share of it
    run.environment = shared_environment(run.environment or {})
    context = {"run": run, "chart": run_chart_data(run), "shared": True, "share_title": link.title,
               "cancellation": run_cancellation(run), "method": method}  # fmt: skip
    return render(request, "runs/run_detail.html", context)


def shared_environment(environment: dict[str, Any]) -> dict[str, Any]:
    """The facts of SHARED_FACTS; the settings without paths or addresses; of reuse, only
    whether it happened (not the other run's id)."""
    shown: dict[str, Any] = {
        section: {key: facts[key] for key in keys if key in facts}
        for section, keys in SHARED_FACTS.items()
        if isinstance(facts := environment.get(section), dict)
    }
    settings = (environment.get("postgresql") or {}).get("non_default_settings") or {}
    shown.setdefault("postgresql", {})["non_default_settings"] = {
        name: value for name, value in settings.items() if "/" not in str(value) and name not in ADDRESS_SETTINGS
    }
    reuse = environment.get("reuse") or {}
    shown["reuse"] = {key: bool(reuse.get(key)) for key in ("reused_from_run", "reuse_refused", "kept_for_next_run")}
    return shown


def _shared_campaign(request: HttpRequest, link: ShareLink, token: str) -> HttpResponse:
    try:
        context = campaign_context(_campaign_of(link), request.GET.get("baseline"))
    except BadParameter as exc:
        return refused(request, str(exc))
    context |= {
        "shared": True,
        "share_title": link.title,
        "compare_url": reverse("shared-campaign-compare", args=[token]),
        "report_url": reverse("shared-campaign-report", args=[token]),
        "results_csv": reverse("shared-campaign-export-csv", args=[token]) + "?what=table",
    }
    return render(request, "runs/campaign_detail.html", context)


def _query(link: ShareLink) -> ComparisonQuery:
    """The comparison a link shows: a comparison's own runs and options, a campaign's runs."""
    if link.kind == ShareKind.CAMPAIGN:
        return ComparisonQuery(campaign_id=link.campaign_id)
    return ComparisonQuery.from_share(link.run_ids, link.options)


def _comparison_urls(token: str, of: str) -> ComparisonUrls:
    name = "shared-campaign-compare" if of == ShareKind.CAMPAIGN else "shared"
    return ComparisonUrls(base=reverse(name, args=[token]), query="")


def _shared_comparison(request: HttpRequest, link: ShareLink, urls: ComparisonUrls, *, report: bool) -> HttpResponse:
    try:
        query = _query(link)
    except BadParameter as exc:
        return refused(request, str(exc))
    return render_comparison(request, query, urls, shared=True, report=report, title=link.title)


@shared
def shared_samples(request: HttpRequest, token: str) -> HttpResponse:
    link = _live(token, (ShareKind.RUN,))
    return JsonResponse(run_chart_data(_run_of(link)))


@shared
def shared_campaign_comparison(request: HttpRequest, token: str) -> HttpResponse:
    link = _live(token, (ShareKind.CAMPAIGN,))
    return _shared_comparison(request, link, _comparison_urls(token, ShareKind.CAMPAIGN), report=False)


@shared
def shared_report(request: HttpRequest, token: str, of: str) -> HttpResponse:
    link = _live(token, (of,))
    return _shared_comparison(request, link, _comparison_urls(token, of), report=True)


@shared
def shared_data(request: HttpRequest, token: str, of: str) -> HttpResponse:
    return comparison_data_response(request, _query(_live(token, (of,))))


@shared
def shared_export(request: HttpRequest, token: str, of: str, fmt: str) -> HttpResponseBase:
    return comparison_export_response(request, _query(_live(token, (of,))), fmt)
