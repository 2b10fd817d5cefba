"""A device's page: what the inventory says about it, its vendor's claims beside what fio
measured, and its history: its series across all studies (runs.watch), its fio baselines over
time (table and chart), its SMART/NVMe health over time, and its recent pgbench runs."""

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from runs.baselines.selectors import (
    claims_vs_measured,
    device_baselines,
    device_chart,
    device_recent_runs,
    latest_done,
)
from runs.baselines.services.baselines import baseline_device_refusal
from runs.compare.selectors.drift import device_drift
from runs.inventory.selectors import HEALTH_READ_BOUND, device_health, health_ask
from runs.inventory.services.device_health import HealthUnread, device_health_ask, device_health_refusal
from runs.models import CLAIMS, Device
from runs.watch.summaries import series_list

HISTORY_ROWS = 100


@require_safe
@permission_required("runs.view_device", raise_exception=True)
def device_detail(request: HttpRequest, device_id: int) -> HttpResponse:
    device = get_object_or_404(Device.objects.select_related("host"), pk=device_id)
    latest = latest_done(device)
    context = {
        "device": device,
        "latest": latest,
        "claims": claims_vs_measured(device, latest),
        "has_claims": any(getattr(device, name) is not None for name, _figure in CLAIMS),
        "baselines": device_baselines(device)[:HISTORY_ROWS],
        "chart": device_chart(device),
        "series": series_list(device_id=device.pk),
        "health": device_health(device),
        "health_refusal": device_health_refusal(device),
        "health_ask": health_ask(device),
        "health_read_bound_min": int(HEALTH_READ_BOUND.total_seconds() // 60),
        "runs": device_recent_runs(device),
        "fio_refusal": baseline_device_refusal(device),
        "drift": device_drift(device),
    }
    return render(request, "runs/device_detail.html", context)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def device_health_now(request: HttpRequest, device_id: int) -> HttpResponse:
    """The "Read health now" button: a worker reads it (smartctl can take a minute); the page
    returns at once and says it is under way (static/js/device_health.js follows it)."""
    device = get_object_or_404(Device.objects.select_related("host"), pk=device_id)
    try:
        device_health_ask(device=device, request=request)
    except HealthUnread as exc:
        messages.error(request, str(exc))
    return redirect("device-detail", device_id=device.pk)


@require_safe
@permission_required("runs.view_device", raise_exception=True)
def device_health_state(request: HttpRequest, device_id: int) -> JsonResponse:
    """Whether the device's "Read health now" is still under way: what its page polls."""
    device = get_object_or_404(Device, pk=device_id)
    ask = health_ask(device)
    return JsonResponse(ask.as_json() if ask else {"pending": False, "asked_at": None, "overdue": False})
