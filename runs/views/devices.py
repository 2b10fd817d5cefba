"""A device's page: what the inventory says about it, its vendor's claims beside what fio
measured, its fio history over time (table and chart), and its recent pgbench runs."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from runs.baselines.selectors import (
    claims_vs_measured,
    device_baselines,
    device_chart,
    device_recent_runs,
    latest_done,
)
from runs.baselines.services.baselines import baseline_device_refusal
from runs.compare.selectors.drift import device_drift
from runs.models import CLAIMS, Device

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
        "runs": device_recent_runs(device),
        "fio_refusal": baseline_device_refusal(device),
        "drift": device_drift(device),
    }
    return render(request, "runs/device_detail.html", context)
