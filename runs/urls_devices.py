"""Devices' pages and fio baselines (issue 15): included by runs/urls.py."""

from django.urls import path

from runs.jobs.kinds import BASELINE
from runs.views import baselines, cancel, devices, live

urlpatterns = [
    path("devices/<id:device_id>/", devices.device_detail, name="device-detail"),
    path("devices/<id:device_id>/health", devices.device_health_now, name="device-health-read"),
    path("devices/<id:device_id>/health.json", devices.device_health_state, name="device-health-state"),
    path("baselines/", baselines.baselines_page, name="baselines"),
    path("baselines/new/", baselines.baseline_new, name="baseline-new"),
    path("baselines/<id:baseline_id>/", baselines.baseline_detail, name="baseline-detail"),
    path("baselines/<id:baseline_id>/fio.json", baselines.baseline_json, name="baseline-json"),
    path("baselines/<id:baseline_id>/events", live.baseline_events, name="baseline-events"),
    path("baselines/<id:baseline_id>/cancel", cancel.job_cancel_view, {"kind": BASELINE}, name="baseline-cancel"),
]
