from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.services.health import health_report

# A monitor reads the status code: 200 when everything answers, 503 otherwise.
UNHEALTHY = 503


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def health_page(request: HttpRequest) -> HttpResponse:
    report = health_report()
    return render(request, "runs/health.html", {"report": report}, status=200 if report.ok else UNHEALTHY)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def health_json(request: HttpRequest) -> JsonResponse:
    report = health_report()
    return JsonResponse(report.as_dict(), status=200 if report.ok else UNHEALTHY)
