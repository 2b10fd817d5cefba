"""fio baseline pages: the list, the form ("Measure this device with fio"), a baseline (live
while fio runs, results after), its raw JSON (cancelling one: views.cancel). Viewers see them;
operators queue and cancel their own (admins anybody's), as with runs and builds."""

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from runs.baselines.selectors import claims_vs_measured
from runs.baselines.services.baselines import baseline_device_refusal, baseline_queue
from runs.common.paging import asked_page, page_or_last
from runs.common.params import BadParameter, parse_id
from runs.forms.baselines import BaselineForm
from runs.jobs.cancel import job_cancel_refusal
from runs.jobs.selectors import baseline_wait
from runs.models import FIGURES, BaselineState, Device, DeviceBaseline
from runs.views.refusals import refused

BASELINES_PER_PAGE = 50


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def baselines_page(request: HttpRequest) -> HttpResponse:
    baselines = DeviceBaseline.objects.select_related("host", "device", "queued_by").defer("fio_json", "log")
    try:
        number = asked_page(request.GET.get("page"))
    except BadParameter as exc:
        return refused(request, str(exc))
    paginator = Paginator(baselines.order_by("-created_at", "-id"), BASELINES_PER_PAGE)
    page, past_the_end = page_or_last(paginator, number, "baselines")
    return render(request, "runs/baseline_list.html", {"page": page, "past_the_end": past_the_end})


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.queue_run", raise_exception=True)
def baseline_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = BaselineForm(request.POST)
        if form.is_valid():
            try:
                baseline = baseline_queue(
                    device=form.cleaned_data["device"], settings=form.settings(), by=request.user, request=request
                )
            except ValidationError as exc:  # the inventory changed between the form's check and now
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                messages.success(request, f"fio baseline {baseline.pk} queued on {baseline.device}.")
                return redirect("baseline-detail", baseline_id=baseline.pk)
        return render(request, "runs/baseline_form.html", {"form": form}, status=400)
    initial = {}
    if device := request.GET.get("device"):
        try:
            initial["device"] = get_object_or_404(Device, pk=parse_id(device, "device (the device to measure)")).pk
        except BadParameter as exc:
            return refused(request, str(exc))
    # A device given (from its page): why it cannot be measured is said before anything is sent.
    note = baseline_device_refusal(Device.objects.select_related("host").get(pk=initial["device"])) if initial else None
    return render(request, "runs/baseline_form.html", {"form": BaselineForm(initial=initial), "device_refusal": note})


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def baseline_detail(request: HttpRequest, baseline_id: int) -> HttpResponse:
    baseline = get_object_or_404(DeviceBaseline.objects.select_related("host", "device", "queued_by"), pk=baseline_id)
    figures = baseline.figures
    rows = [(key, label, unit, figures[key]) for key, _job, _dir, _figure, label, unit in FIGURES]
    context = {
        "baseline": baseline,
        "waits": baseline_wait(baseline),
        "figure_rows": rows,
        "jobs": [(name, baseline.results[name]) for name in baseline.jobs if name in baseline.results],
        "claims": claims_vs_measured(baseline.device, baseline) if baseline.state == BaselineState.DONE else [],
        "cancel_refusal": job_cancel_refusal(request.user, baseline),
    }
    return render(request, "runs/baseline_detail.html", context)


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def baseline_json(request: HttpRequest, baseline_id: int) -> HttpResponse:
    """fio's own JSON output, whole, as a download."""
    baseline = get_object_or_404(DeviceBaseline.objects.only("fio_json"), pk=baseline_id)
    if not baseline.fio_json:
        return refused(request, f"fio baseline {baseline_id} has no fio output (it did not finish).", status=404)
    response = HttpResponse(baseline.fio_json, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="fio-baseline-{baseline_id}.json"'
    return response
