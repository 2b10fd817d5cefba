from django.contrib.auth.decorators import login_not_required, permission_required
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from runs.common.services.health import health_report, public_health_report

# A monitor reads the status code: 200 when everything answers, 503 otherwise.
UNHEALTHY = 503


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def health_page(request: HttpRequest) -> HttpResponse:
    report = health_report()
    return render(request, "runs/health.html", {"report": report}, status=200 if report.ok else UNHEALTHY)


@require_safe
@never_cache
@login_not_required
def health_json(request: HttpRequest) -> JsonResponse:
    """For monitors without an account: up or down per component (README, "Monitoring"). Who may see
    the inventory gets the details (versions, worker names, errors), checked afresh."""
    if _may_see_details(request):
        report = health_report()
        return JsonResponse(report.as_dict(), status=200 if report.ok else UNHEALTHY)
    public = public_health_report()
    return JsonResponse(public.as_public_dict(), status=200 if public.ok else UNHEALTHY)


def _may_see_details(request: HttpRequest) -> bool:
    try:
        return request.user.has_perm("runs.view_host")
    except DatabaseError:  # the session and user live in the database, which may be what is down
        return False
