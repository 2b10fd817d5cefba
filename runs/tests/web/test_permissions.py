"""The authorization matrix: every URL, every role, every method.

Each named URL has a row saying who may use it and with which methods; the expected outcome
of every (role, method) pair is derived from the row, and the test sends every one of them.
`test_the_matrix_covers_every_url` fails when a URL exists that the matrix does not list,
so no page or endpoint can be shipped without deciding who may use it.

Every request runs in a savepoint that is rolled back: a POST that deletes a host as one role
does not change what the next role sees.
"""

import copy
import http.client
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core.management.color import no_style
from django.db import connection, transaction
from django.http.response import HttpResponseBase
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from knox.models import AuthToken

from benchlab.asgi_handler import is_long_lived
from runs.bench.specs import RunSpec
from runs.common.services import health
from runs.compare.query import ComparisonQuery
from runs.compare.services.shares import share_create
from runs.models import (
    AuditAction,
    AuditEvent,
    Campaign,
    CampaignSchedule,
    Device,
    DeviceBaseline,
    Host,
    PgBuild,
    PgInstall,
    Run,
    ScheduleSubscriber,
    ShareKind,
    ShareLink,
    StoredChangePoint,
    StudyAfterBuilds,
    WorkloadScript,
)
from runs.schedules.crontab import CRON_PRESETS
from runs.schedules.services.schedules import schedule_create
from runs.tests.conftest import ClientFactory, make_cast
from runs.tests.factories import make_device, make_host, make_pg_install, make_run, make_user
from runs.tests.job_factories import make_baseline, make_build, make_campaign, make_change_point
from runs.tests.web_server import WebServer, uvicorn
from runs.watch.series import series_key

LOGIN, FORBIDDEN, NOT_FOUND, NOT_ALLOWED, ALLOWED = "login", "forbidden", "not found", "not allowed", "allowed"
REDIRECTS, MAX_REDIRECTS = frozenset({301, 302, 303, 307, 308}), 5
UNAUTHORIZED = "unauthorized"  # the API answers 401 instead of redirecting to the login page
ROLES = ["anonymous", "nora", "vera", "otto", "ada", "root"]  # no role, viewer, operator, admin, superuser
METHODS = ["get", "head", "options", "post", "put", "patch", "delete"]

EVERYONE = frozenset(ROLES)
SIGNED_IN = EVERYONE - {"anonymous"}
VIEWERS = frozenset({"vera", "otto", "ada", "root"})
OPERATORS = frozenset({"otto", "ada", "root"})
ADMINS = frozenset({"ada", "root"})
SUPERUSERS = frozenset({"root"})
NOBODY: frozenset[str] = frozenset()

READ = frozenset({"get", "head"})  # require_safe
STREAM = frozenset({"get"})  # require_GET: an event stream has no HEAD
FORM = frozenset({"get", "head", "post"})
POST = frozenset({"post"})
# Django's class-based views answer OPTIONS themselves, and a FormView takes a PUT as a POST.
DJANGO_PAGE = frozenset({"get", "head", "options"})
DJANGO_FORM = DJANGO_PAGE | {"post", "put"}
DJANGO_POST = frozenset({"post", "options"})
# The API: a reader may ask any URL what it offers (OPTIONS); HEAD goes with GET.
API_READ = frozenset({"get", "head", "options"})
API_FORM = API_READ | {"post"}
API_POST = frozenset({"post", "options"})
ANY = frozenset(METHODS)  # the admin's views answer every method (a PUT is shown the page, like a GET)


@dataclass(frozen=True)
class Objects:
    host: Host
    device: Device
    pg: PgInstall
    group: Group
    user: User
    run: Run
    token: AuthToken
    attempt: AccessAttempt
    access_log: AccessLog
    failure_log: AccessFailureLog
    audit: AuditEvent
    campaign: Campaign
    share: ShareLink  # otto's link to the run
    share_tokens: dict[str, str]  # the token of otto's link of each kind
    build: PgBuild  # a PostgreSQL build otto queued
    study: StudyAfterBuilds  # otto's page-size study, waiting for that build
    baseline: DeviceBaseline  # a fio baseline otto queued on the device
    script: WorkloadScript  # an admin's library script no run has used (so still editable)
    schedule: CampaignSchedule  # otto's schedule repeating his campaign
    change_point: StoredChangePoint  # found in a series, open
    subscriber: ScheduleSubscriber  # of otto's schedule


@dataclass(frozen=True)
class Row:
    """Who may use a URL and with which methods.

    Pages check the method first (require_GET/POST), so a wrong method is 405 for everyone
    signed in; the API and the admin check the role first, then the method. Anonymous users
    are sent to the login page, or get 401 from the API. `special` overrides single
    (role, method) outcomes, each with its reason beside it."""

    who: frozenset[str]
    methods: frozenset[str] = READ
    args: Callable[[Objects], list[Any]] = lambda objects: []
    kind: str = "page"  # or "api", "admin"
    query: dict[str, str] | Callable[[Objects], dict[str, str]] | None = None  # a callable: from the objects
    # Who may use a method when it differs from `who` (a POST that queues a run).
    who_by_method: dict[str, frozenset[str]] = field(default_factory=dict)
    special: dict[tuple[str, str], str] = field(default_factory=dict)

    def expected(self, role: str, method: str) -> str:
        if (role, method) in self.special:
            return self.special[(role, method)]
        who = self.who_by_method.get(method, self.who)
        if role == "anonymous" and role not in who:
            return UNAUTHORIZED if self.kind == "api" else LOGIN
        if self.kind == "api" and method not in self.methods:
            # No action answers this method: the API asks only for a reader before saying so.
            return NOT_ALLOWED if role in VIEWERS else FORBIDDEN
        if self.kind in ("api", "admin"):
            if role not in who:
                return FORBIDDEN
            return ALLOWED if method in self.methods else NOT_ALLOWED
        if method not in self.methods:
            return NOT_ALLOWED
        return ALLOWED if role in who else FORBIDDEN


def Admin(who: frozenset[str], methods: frozenset[str] = ANY, **fields: Any) -> Row:
    """A row of the admin: it answers every method unless said otherwise (a PUT shows the page)."""
    return Row(who, methods, kind="admin", **fields)


def pk_of(obj: Callable[[Objects], Any]) -> Callable[[Objects], list[Any]]:
    return lambda objects: [obj(objects).pk]


def model_rows(
    app_model: str, obj: Callable[[Objects], Any], view: frozenset[str], change: frozenset[str] | None = None
) -> dict[str, Row]:
    """The admin's five pages of a model: who may view them, and who may add, change, delete."""
    change = view if change is None else change
    return {
        f"admin:{app_model}_changelist": Admin(view),
        f"admin:{app_model}_add": Admin(change),
        f"admin:{app_model}_change": Admin(view, args=pk_of(obj)),
        f"admin:{app_model}_delete": Admin(change, args=pk_of(obj)),
        f"admin:{app_model}_history": Admin(view, args=pk_of(obj)),
    }


def run_pk(objects: Objects) -> list[Any]:
    return [objects.run.pk]


def build_pk(objects: Objects) -> list[Any]:
    return [objects.build.pk]


def baseline_pk(objects: Objects) -> list[Any]:
    return [objects.baseline.pk]


def device_pk(objects: Objects) -> list[Any]:
    return [objects.device.pk]


def host_pk(objects: Objects) -> list[Any]:
    return [objects.host.pk]


def study_pk(objects: Objects) -> list[Any]:
    return [objects.study.pk]


def campaign_pk(objects: Objects) -> list[Any]:
    return [objects.campaign.pk]


def schedule_pk(objects: Objects) -> list[Any]:
    return [objects.schedule.pk]


def token_of(kind: str) -> Callable[[Objects], list[Any]]:
    return lambda objects: [objects.share_tokens[kind]]


def series_of_run(objects: Objects) -> list[Any]:
    return [series_key(RunSpec.from_run(objects.run))]


def compared_runs(objects: Objects) -> dict[str, str]:
    return {"runs": str(objects.run.pk)}


def record_rows(
    app_model: str, obj: Callable[[Objects], Any], view: frozenset[str], delete: frozenset[str] = NOBODY
) -> dict[str, Row]:
    """A record the admin shows but nobody adds or edits (its change page saves nothing: a POST
    is refused), deleted only by `delete` (nobody, unless said)."""
    nobody_saves = {(role, "post"): FORBIDDEN for role in SIGNED_IN}
    return model_rows(app_model, obj, view) | {
        f"admin:{app_model}_add": Admin(NOBODY),
        f"admin:{app_model}_change": Admin(view, args=pk_of(obj), special=nobody_saves),
        f"admin:{app_model}_delete": Admin(delete, args=pk_of(obj)),
    }


MATRIX: dict[str, Row] = {
    "home": Row(VIEWERS),
    "health": Row(VIEWERS),
    # Monitors ask without an account: they get up or down only (runs/views/health.py).
    "health-json": Row(EVERYONE),
    "runs": Row(VIEWERS),
    "runs-events": Row(VIEWERS, STREAM),
    "run-new": Row(OPERATORS, FORM),
    "run-import": Row(OPERATORS, FORM),
    "run-detail": Row(VIEWERS, args=run_pk),
    "run-samples-json": Row(VIEWERS, args=run_pk),
    "run-wait-json": Row(VIEWERS, args=run_pk),
    "run-events": Row(VIEWERS, STREAM, args=run_pk),
    "run-artifact": Row(VIEWERS, args=lambda objects: [objects.run.pk, "pgbench.stdout.txt"]),
    # Operators may cancel only their own runs; this one was queued by otto.
    "run-cancel": Row(OPERATORS, POST, run_pk),
    # Whoever may queue runs may accept a warning with a reason (the run has none open: 400).
    "run-method-accept": Row(OPERATORS, POST, run_pk),
    # Notes: anyone reads the form (a viewer is told why she cannot save); its owner (otto) or an admin saves.
    "run-notes": Row(VIEWERS, FORM, run_pk, who_by_method={"post": OPERATORS}),
    "campaign-notes": Row(VIEWERS, FORM, campaign_pk, who_by_method={"post": OPERATORS}),
    # It explains the checks and shows no lab data: shared pages link to it.
    "method-help": Row(EVERYONE),
    "campaigns": Row(VIEWERS),
    "builds": Row(VIEWERS),
    "build-new": Row(OPERATORS, FORM),
    "build-detail": Row(VIEWERS, args=build_pk),
    "build-events": Row(VIEWERS, STREAM, args=build_pk),
    # Operators may cancel or remove only their own builds; this one was queued by otto.
    "build-cancel": Row(OPERATORS, POST, build_pk),
    "build-remove": Row(OPERATORS, POST, build_pk),
    "device-detail": Row(VIEWERS, args=device_pk),
    "device-health-read": Row(OPERATORS, POST, device_pk),
    "device-health-state": Row(VIEWERS, args=device_pk),
    "host-detail": Row(VIEWERS, args=host_pk),
    "baselines": Row(VIEWERS),
    "baseline-new": Row(OPERATORS, FORM),
    "baseline-detail": Row(VIEWERS, args=baseline_pk),
    "baseline-events": Row(VIEWERS, STREAM, args=baseline_pk),
    # fio's JSON: the queued baseline has none yet (404 for those who may see it).
    "baseline-json": Row(VIEWERS, args=baseline_pk, special={(r, m): NOT_FOUND for r in VIEWERS for m in READ}),
    # Operators may cancel only their own baselines; this one was queued by otto.
    "baseline-cancel": Row(OPERATORS, POST, baseline_pk),
    "campaign-new": Row(OPERATORS, FORM),
    "campaign-detail": Row(VIEWERS, args=campaign_pk),
    # otto's campaign: its owner and admins cancel and retry it (otto is the cast's one operator;
    # another operator is refused: test_refusals.py).
    "campaign-cancel": Row(OPERATORS, POST, campaign_pk),
    "campaign-retry": Row(OPERATORS, POST, campaign_pk),
    # Schedules: viewers see them; otto's own (and admins) make, change, pause, fire and delete them.
    "schedules": Row(VIEWERS),
    "schedule-detail": Row(VIEWERS, args=schedule_pk),
    "schedule-new": Row(OPERATORS, POST, campaign_pk),
    "schedule-edit": Row(OPERATORS, POST, schedule_pk),
    "schedule-enable": Row(OPERATORS, POST, schedule_pk),
    "schedule-run-now": Row(OPERATORS, POST, schedule_pk),
    "schedule-delete": Row(OPERATORS, POST, schedule_pk),
    # Its subscribers: who may change the schedule adds and removes them.
    "subscriber-add": Row(OPERATORS, POST, schedule_pk),
    "subscriber-remove": Row(OPERATORS, POST, args=lambda o: [o.schedule.pk, o.subscriber.pk]),
    # Stored change points: viewers see them; operators and admins triage them.
    "regressions": Row(VIEWERS),
    "change-point-triage": Row(OPERATORS, POST, args=pk_of(lambda o: o.change_point)),
    # Queues the builds the page-size study lacks (refused here, with the reason: the test's host
    # cannot be asked which package it has), then follows them.
    "study-after-builds-new": Row(OPERATORS, POST),
    "study-after-builds": Row(VIEWERS, args=study_pk),
    "series": Row(VIEWERS),
    # The run is queued: its configuration has no done run yet, so no series (404 once allowed).
    "series-detail": Row(VIEWERS, args=series_of_run, special={(r, m): NOT_FOUND for r in VIEWERS for m in READ}),
    "compare": Row(VIEWERS, query=compared_runs),
    "compare-data": Row(VIEWERS, query=compared_runs),
    "compare-report": Row(VIEWERS, query=compared_runs),
    "compare-export-csv": Row(VIEWERS, query=compared_runs),
    "compare-export-json": Row(VIEWERS, query=compared_runs),
    "shares": Row(VIEWERS),
    "share-new": Row(VIEWERS, POST),
    # The link was made by otto: its owner or an admin is asked (GET) and revokes it (POST); anybody
    # else is refused both.
    "share-revoke": Row(OPERATORS, FORM, args=pk_of(lambda o: o.share)),
    # API tokens: every signed-in user makes and lists their own. The token is nora's: she or an
    # admin revokes it; to anybody else it is not found, like an unknown one.
    "tokens": Row(SIGNED_IN, FORM),
    "token-revoke": Row(
        SIGNED_IN,
        FORM,
        args=lambda o: [o.token.digest],
        special={(role, method): NOT_FOUND for role in ("vera", "otto") for method in FORM},
    ),
    # A shared page is for anyone with its token, with no account.
    "shared": Row(EVERYONE, args=token_of(ShareKind.RUN)),
    "shared-samples": Row(EVERYONE, args=token_of(ShareKind.RUN)),
    "shared-data": Row(EVERYONE, args=token_of(ShareKind.COMPARISON)),
    "shared-report": Row(EVERYONE, args=token_of(ShareKind.COMPARISON)),
    "shared-export-csv": Row(EVERYONE, args=token_of(ShareKind.COMPARISON)),
    "shared-export-json": Row(EVERYONE, args=token_of(ShareKind.COMPARISON)),
    "shared-campaign-compare": Row(EVERYONE, args=token_of(ShareKind.CAMPAIGN)),
    "shared-campaign-data": Row(EVERYONE, args=token_of(ShareKind.CAMPAIGN)),
    "shared-campaign-report": Row(EVERYONE, args=token_of(ShareKind.CAMPAIGN)),
    "shared-campaign-export-csv": Row(EVERYONE, args=token_of(ShareKind.CAMPAIGN)),
    "shared-campaign-export-json": Row(EVERYONE, args=token_of(ShareKind.CAMPAIGN)),
    # The API's OpenAPI schema and its reference page: anyone signed in (they hold no lab data). The
    # schema's view asks only for a sign-in, so a user with no role is told 405 too, not 403.
    "api:schema": Row(
        SIGNED_IN, API_READ, kind="api", special={("nora", m): NOT_ALLOWED for m in ("post", "put", "patch", "delete")}
    ),
    "api:reference": Row(SIGNED_IN),
    "api:comparison-list": Row(VIEWERS, API_READ, kind="api", query=compared_runs),
    "api:comparison-summary": Row(VIEWERS, API_READ, kind="api", query=compared_runs),
    "api:comparison-series": Row(VIEWERS, API_READ, kind="api", query=compared_runs),
    "api:campaign-comparison": Row(VIEWERS, API_READ, args=campaign_pk, kind="api"),
    "api:campaign-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:campaign-detail": Row(VIEWERS, API_READ, args=campaign_pk, kind="api"),
    "api:campaign-cancel": Row(OPERATORS, API_POST, campaign_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:campaign-retry": Row(OPERATORS, API_POST, campaign_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:campaign-notes": Row(OPERATORS, API_POST, campaign_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:campaign-results-table": Row(VIEWERS, API_READ, args=campaign_pk, kind="api"),
    "api:schedule-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:schedule-detail": Row(
        VIEWERS,
        API_READ | {"put", "patch", "delete"},
        args=schedule_pk,
        kind="api",
        who_by_method={"put": OPERATORS, "patch": OPERATORS, "delete": OPERATORS},
    ),
    "api:schedule-run-now": Row(OPERATORS, API_POST, schedule_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:change-point-list": Row(VIEWERS, API_READ, kind="api"),
    "api:change-point-detail": Row(
        VIEWERS,
        API_READ | {"put", "patch"},
        args=pk_of(lambda o: o.change_point),
        kind="api",
        who_by_method={"put": OPERATORS, "patch": OPERATORS},
    ),
    "api:subscriber-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:subscriber-detail": Row(
        VIEWERS,
        API_READ | {"delete"},
        args=pk_of(lambda o: o.subscriber),
        kind="api",
        who_by_method={"delete": OPERATORS},
    ),
    "api:api-root": Row(VIEWERS, API_READ, kind="api"),
    "api:host-list": Row(VIEWERS, API_READ, kind="api"),
    "api:host-detail": Row(VIEWERS, API_READ, args=pk_of(lambda o: o.host), kind="api"),
    # It asks the host (over SSH) which PostgreSQL sources it has: for those who may build.
    "api:host-build-sources": Row(
        OPERATORS, API_READ, args=pk_of(lambda o: o.host), kind="api", who_by_method={"options": VIEWERS}
    ),
    "api:device-list": Row(VIEWERS, API_READ, kind="api"),
    "api:device-detail": Row(VIEWERS, API_READ, args=pk_of(lambda o: o.device), kind="api"),
    "api:pginstall-list": Row(VIEWERS, API_READ, kind="api"),
    "api:pginstall-detail": Row(VIEWERS, API_READ, args=pk_of(lambda o: o.pg), kind="api"),
    # Reading needs the viewer role; a POST queues a run, which only operators may.
    "api:run-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:run-detail": Row(VIEWERS, API_READ, args=run_pk, kind="api"),
    "api:run-samples": Row(VIEWERS, API_READ, args=run_pk, kind="api"),
    "api:run-cancel": Row(OPERATORS, API_POST, run_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:run-notes": Row(OPERATORS, API_POST, run_pk, kind="api", who_by_method={"options": VIEWERS}),
    # A POST imports pgbench output as a run (runs.api.imports), which only operators may.
    "api:run-import": Row(OPERATORS, API_POST, kind="api", who_by_method={"options": VIEWERS}),
    # Reading needs the viewer role; a POST queues a build, which only operators may.
    "api:build-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:baseline-list": Row(VIEWERS, API_FORM, kind="api", who_by_method={"post": OPERATORS}),
    "api:baseline-detail": Row(VIEWERS, API_READ, args=baseline_pk, kind="api"),
    "api:baseline-cancel": Row(OPERATORS, API_POST, baseline_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:build-detail": Row(VIEWERS, API_READ, args=build_pk, kind="api"),
    "api:build-cancel": Row(OPERATORS, API_POST, build_pk, kind="api", who_by_method={"options": VIEWERS}),
    "api:build-remove": Row(OPERATORS, API_POST, build_pk, kind="api", who_by_method={"options": VIEWERS}),
    "login": Row(EVERYONE, DJANGO_FORM),
    # Logging out is a POST, and ends on the login page.
    "logout": Row(SIGNED_IN, DJANGO_POST, special={(role, "post"): LOGIN for role in ROLES}),
    "password_change": Row(SIGNED_IN, DJANGO_FORM),
    "password_change_done": Row(SIGNED_IN, DJANGO_PAGE),
    "admin:index": Admin(ADMINS),
    "admin:login": Admin(ADMINS, DJANGO_FORM),
    # Logging out through the admin ends on the login page too; others are refused by the admin.
    "admin:logout": Admin(ADMINS, DJANGO_POST, special={("ada", "post"): LOGIN, ("root", "post"): LOGIN}),
    "admin:password_change": Admin(ADMINS, DJANGO_FORM),
    "admin:password_change_done": Admin(ADMINS, DJANGO_PAGE),
    "admin:jsi18n": Admin(ADMINS, DJANGO_PAGE),
    "admin:autocomplete": Admin(
        ADMINS, DJANGO_PAGE, query={"app_label": "runs", "model_name": "device", "field_name": "host", "term": "lab"}
    ),
    # Hosts have no public page of their own, so "view on site" finds nothing even for admins.
    "admin:view_on_site": Admin(
        ADMINS,
        args=lambda objects: [ContentType.objects.get_for_model(Host).pk, objects.host.pk],
        special={(role, method): NOT_FOUND for role in ADMINS for method in METHODS},
    ),
    "admin:app_list": Admin(ADMINS, args=lambda objects: ["runs"]),
    **model_rows("runs_host", lambda objects: objects.host, ADMINS),
    **model_rows("runs_device", lambda objects: objects.device, ADMINS),
    **model_rows("runs_pginstall", lambda objects: objects.pg, ADMINS),
    # The workload library: the admin role adds scripts and versions (a used one is read-only).
    **model_rows("runs_workloadscript", lambda objects: objects.script, ADMINS),
    **record_rows("runs_auditevent", lambda objects: objects.audit, ADMINS),
    # Builds: the admin role sees them and removes them (an action); nobody adds, edits or deletes one.
    **record_rows("runs_pgbuild", lambda objects: objects.build, ADMINS),
    # fio baselines: the admin role sees them; nobody adds, edits or deletes one there.
    **record_rows("runs_devicebaseline", lambda objects: objects.baseline, ADMINS),
    # Campaign schedules: the admin role makes, changes, pauses and deletes them there, through the
    # services (only staff of the operator role besides, for their own campaigns: test_schedule_pages).
    **model_rows("runs_campaignschedule", lambda objects: objects.schedule, ADMINS),
    # Share links: the admin role sees and revokes them (an action); nobody adds, edits or deletes one.
    **record_rows("runs_sharelink", lambda objects: objects.share, ADMINS),
    # Accounts, roles, API tokens and login locks are the superusers' (the admin role runs the lab).
    **model_rows("auth_user", lambda objects: objects.user, SUPERUSERS),
    **model_rows("auth_group", lambda objects: objects.group, SUPERUSERS),
    "admin:auth_user_password_change": Admin(SUPERUSERS, args=pk_of(lambda o: o.user)),
    # A token is issued (shown once) and revoked, never edited: knox's form could set its hash.
    **model_rows("knox_authtoken", lambda objects: objects.token, SUPERUSERS)
    | {
        "admin:knox_authtoken_change": Admin(
            SUPERUSERS, args=pk_of(lambda o: o.token), special={(role, "post"): FORBIDDEN for role in SIGNED_IN}
        )
    },
    # Login locks and history (django-axes): deleting an attempt lifts its lock; the history stays.
    **record_rows("axes_accessattempt", lambda objects: objects.attempt, SUPERUSERS, delete=SUPERUSERS),
    **record_rows("axes_accesslog", lambda objects: objects.access_log, SUPERUSERS),
    **record_rows("axes_accessfailurelog", lambda objects: objects.failure_log, SUPERUSERS),
}


def named_patterns(resolver: URLResolver, namespace: str = "") -> Iterator[str]:
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from named_patterns(pattern, pattern.namespace or namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def outcome(client: Client, method: str, url: str, query: dict[str, str] | None) -> str:
    """What the role gets, following redirects as a browser does; a redirect to the login page
    is the answer itself (the login page is not rendered: a sixth of all requests lead there)."""
    if method == "get":
        response = client.get(url, query or {})
    else:
        response = getattr(client, method)(url + (f"?{_encode(query)}" if query else ""))
    for _ in range(MAX_REDIRECTS):
        if response.status_code not in REDIRECTS:
            break
        target = urlsplit(response["Location"])
        if target.path == reverse("login"):
            return LOGIN
        # As Django's client follows: 307 and 308 repeat the method, the others become a GET.
        again = method if response.status_code in (307, 308) else "get"
        response = getattr(client, again)(target.path + (f"?{target.query}" if target.query else ""))
    return outcome_of_status(response.status_code, f"{method.upper()} {url}")


def outcome_of_status(status: int, request: str) -> str:
    named = {401: UNAUTHORIZED, 403: FORBIDDEN, 404: NOT_FOUND, 405: NOT_ALLOWED}
    if status in named:
        return named[status]
    # 400 is an answer to the role: it got through and its (empty) input was refused. Health
    # pages answer 503 when a component is down; that is still an answer to the user. An API's
    # DELETE done answers 204.
    assert status in (200, 204, 400, 503), f"{request}: unexpected status {status}"
    return ALLOWED


def _encode(query: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode(query)


def make_objects(users: dict[str, User]) -> Objects:
    host = make_host()
    device, pg = make_device(host), make_pg_install(host)
    nora = users["nora"]
    token, _ = AuthToken.objects.create(nora)
    campaign, configuration = make_campaign(users["otto"])
    run = make_run(
        host, device, pg, state="queued", queued_by=users["otto"], campaign=campaign, configuration=configuration
    )
    targets: dict[str, Run | Campaign | ComparisonQuery] = {
        ShareKind.RUN: run,
        ShareKind.CAMPAIGN: campaign,
        ShareKind.COMPARISON: ComparisonQuery(run_ids=(run.pk,)),
    }
    shares = {kind: share_create(kind=kind, target=target, by=users["otto"]) for kind, target in targets.items()}
    build = make_build(host, users["otto"])
    study = StudyAfterBuilds.objects.create(preset="page-size", host=host, created_by=users["otto"])
    study.builds.set([build])
    baseline = make_baseline(device, users["otto"])
    schedule = schedule_create(
        campaign=campaign, name="nightly", crontab=CRON_PRESETS["nightly"].crontab, by=users["otto"]
    )
    return Objects(
        host=host,
        device=device,
        pg=pg,
        group=Group.objects.get(name="viewer"),
        user=nora,
        run=run,
        token=token,
        attempt=AccessAttempt.objects.create(
            username="nora", ip_address="10.0.0.9", user_agent="curl", failures_since_start=2
        ),
        access_log=AccessLog.objects.create(username="nora", ip_address="10.0.0.9", user_agent="curl"),
        failure_log=AccessFailureLog.objects.create(username="nora", ip_address="10.0.0.9", user_agent="curl"),
        audit=AuditEvent.objects.create(
            actor_name="otto", action=AuditAction.RUN_QUEUED, object_type="run", object_repr="run 1"
        ),
        campaign=campaign,
        share=shares[ShareKind.RUN][0],
        share_tokens={kind: token for kind, (_, token) in shares.items()},
        build=build,
        study=study,
        baseline=baseline,
        script=_new_workload_script(),
        schedule=schedule,
        change_point=make_change_point(),
        subscriber=ScheduleSubscriber.objects.create(schedule=schedule, email="ops@example.org"),
    )


def _new_workload_script() -> WorkloadScript:
    """An admin's script. A serialized rollback puts the shipped scripts back with their ids but
    leaves the id sequence behind them (CI: "Key (id)=(1) already exists"), so it is set past them."""
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), [WorkloadScript]):
            cursor.execute(sql)
    return WorkloadScript.objects.create(
        name="mine", title="Mine", description="one select", script="SELECT 1;", parameters=[]
    )


def test_the_matrix_covers_every_url() -> None:
    assert set(named_patterns(get_resolver())) == set(MATRIX)


@dataclass(frozen=True)
class World:
    """What every row's requests share: the objects its URLs name, and each role signed in."""

    objects: Objects
    clients: dict[str, Client]


@pytest.fixture(scope="class")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """Made once for all the rows, in a transaction rolled back after the last of them: each
    row's test runs in a savepoint of it (pytest-django), each request in a savepoint of that."""
    with django_db_blocker.unblock(), transaction.atomic():
        users = make_cast() | {"root": User.objects.create_superuser("root", password=None)}
        cast = ClientFactory(users)
        clients = {role: cast(None if role == "anonymous" else role) for role in ROLES}
        yield World(make_objects(users), clients)
        transaction.set_rollback(True)


@pytest.mark.django_db
class TestTheMatrix:
    @pytest.mark.parametrize("url_name", sorted(MATRIX))
    def test_each_role_and_method_gets_what_the_matrix_says(
        self, url_name: str, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Who may see the health pages is asked here, not what they find (test_health.py): with no
        # worker to answer, each real check would wait out a Celery ping.
        monkeypatch.setattr(health, "CHECKS", dict.fromkeys(health.CHECKS, lambda: "checked"))
        health.public_health_report_forget()
        row = MATRIX[url_name]
        url = reverse(url_name, args=row.args(world.objects))
        query = row.query(world.objects) if callable(row.query) else row.query

        got, expected = {}, {}
        for role in ROLES:
            for method in METHODS:
                client = world.clients[role]
                cookies = copy.deepcopy(client.cookies)  # a logout in one request must not end the next one's login
                with transaction.atomic():
                    got[role, method] = outcome(client, method, url, query)
                    transaction.set_rollback(True)
                client.cookies = cookies
                expected[role, method] = row.expected(role, method)

        wrong = {key: f"got {got[key]}, expected {expected[key]}" for key in got if got[key] != expected[key]}
        assert not wrong, f"{url_name} ({url}): {wrong}"


# ---- the event streams, on the real web server ----
# Their requests take a way of their own through benchlab's ASGI handler (benchlab/asgi_handler.py),
# which the test client does not go through: their rows are sent again to uvicorn.

CSRF_SECRET = "a" * 32  # the test client skips the CSRF check; a real request must pass it
ADDED = {"date", "server", "transfer-encoding"}  # by uvicorn


def served_outcome(server: WebServer, method: str, url: str, cookies: dict[str, str]) -> tuple[str, dict[str, str]]:
    """What uvicorn answers (an outcome of the matrix) and its headers; a stream is left once
    its headers came."""
    response, headers = served(server, method, url, cookies)
    if response.status == 302 and urlsplit(headers["location"]).path == reverse("login"):
        return LOGIN, headers
    return outcome_of_status(response.status, f"{method.upper()} {url} on uvicorn"), headers


def served(
    server: WebServer, method: str, url: str, cookies: dict[str, str]
) -> tuple[http.client.HTTPResponse, dict[str, str]]:
    cookie = "; ".join(f"{name}={value}" for name, value in (cookies | {"csrftoken": CSRF_SECRET}).items())
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method.upper(), url, headers={"Cookie": cookie, "X-CSRFToken": CSRF_SECRET})
        response = connection.getresponse()
        headers = comparable(dict(response.getheaders()))
    finally:
        connection.close()
    return response, headers


def cookies_set_by(server: WebServer, url: str) -> dict[str, str]:
    response = served(server, "get", url, {})[0]
    jar = SimpleCookie()
    for set_cookie in response.headers.get_all("Set-Cookie") or []:
        jar.load(set_cookie)
    return {name: morsel.value for name, morsel in jar.items()}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_web_server_answers_event_streams_to_each_role_and_method_as_the_matrix_says(
    client_for: ClientFactory,
) -> None:
    client_for.users["root"] = User.objects.create_superuser("root", password=None)
    objects = make_objects(client_for.users)
    urls = {name: reverse(name, args=row.args(objects)) for name, row in MATRIX.items() if row.kind == "page"}
    streams = {name: url for name, url in urls.items() if is_long_lived(url)}
    clients = {role: client_for(None if role == "anonymous" else role) for role in ROLES}

    wrong = {}
    with uvicorn() as server:
        for (name, url), role, method in itertools.product(streams.items(), ROLES, METHODS):
            cookies = {"sessionid": clients[role].cookies["sessionid"].value} if role != "anonymous" else {}
            got, headers = served_outcome(server, method, url, cookies)
            expected = MATRIX[name].expected(role, method)
            if got != expected:
                wrong[name, role, method] = f"got {got}, expected {expected}"
            # The headers the browser's script gets: the middleware's, as the test client sees them.
            if method == "get" and headers != (middleware_headers := headers_of(clients[role].get(url))):
                wrong[name, role, "headers"] = f"got {headers}, expected {middleware_headers}"
        # A share link opens its shared page, which follows no stream: it opens none either.
        holder = cookies_set_by(server, reverse("shared", args=[objects.share_tokens[ShareKind.RUN]]))
        for name, url in streams.items():
            if (got := served_outcome(server, "get", url, holder)[0]) != LOGIN:
                wrong[name, "share link holder", "get"] = f"got {got}, expected {LOGIN}"

    assert set(streams) == {"runs-events", "run-events", "build-events", "baseline-events"}
    assert not wrong, wrong


def headers_of(response: HttpResponseBase) -> dict[str, str]:
    return comparable(dict(response.headers.items()))


def comparable(headers: dict[str, str]) -> dict[str, str]:
    """Without what uvicorn adds; the policy's directives in one order (django-csp's order
    differs from one process to the next)."""
    found = {header.lower(): value for header, value in headers.items() if header.lower() not in ADDED}
    if policy := found.get("content-security-policy"):
        found["content-security-policy"] = "; ".join(sorted(policy.split("; ")))
    return found


@pytest.mark.django_db
def test_an_admin_who_is_not_staff_logs_in_on_the_one_login_page_and_reaches_the_admin() -> None:
    make_user("ada", "admin", password="ada-has-a-long-password")
    client = Client()

    first = client.get("/admin/", follow=True)
    client.post(reverse("login"), {"username": "ada", "password": "ada-has-a-long-password"})
    admin = client.get("/admin/")

    assert first.request["PATH_INFO"] == reverse("login")
    assert admin.status_code == 200
    assert "Hardware inventory" in admin.content.decode()


@pytest.mark.django_db
def test_a_viewer_cannot_change_the_inventory_by_posting(client_for: ClientFactory) -> None:
    host = make_host()
    response = client_for("vera").post(
        reverse("admin:runs_host_change", args=[host.pk]), {"name": "renamed", "transport": "local"}, follow=True
    )

    assert response.status_code == 403
    host.refresh_from_db()
    assert host.name == "lab1"


@pytest.mark.django_db
def test_an_operator_may_queue_and_cancel_runs_but_a_viewer_may_not(client_for: ClientFactory) -> None:
    users = client_for.users
    assert users["otto"].has_perms(["runs.queue_run", "runs.cancel_run"])
    assert not users["otto"].has_perm("runs.cancel_any_run")
    assert users["ada"].has_perms(["runs.queue_run", "runs.cancel_any_run", "runs.change_device"])
    assert not users["vera"].has_perm("runs.queue_run")
    assert not users["otto"].has_perm("runs.change_host")
