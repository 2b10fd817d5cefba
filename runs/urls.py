from django.urls import path

from runs import params  # noqa: F401 - registers the <id:…> and <name:…> converters
from runs.views import campaigns, health, home, live, runs

urlpatterns = [
    path("runs/", runs.runs_page, name="runs"),
    path("runs/events", live.runs_events, name="runs-events"),
    path("runs/new/", runs.run_new, name="run-new"),
    path("runs/<id:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<id:run_id>/samples.json", runs.run_samples_json, name="run-samples-json"),
    path("runs/<id:run_id>/events", live.run_events, name="run-events"),
    path("runs/<id:run_id>/wait.json", runs.run_wait_json, name="run-wait-json"),
    path("runs/<id:run_id>/cancel", runs.run_cancel_view, name="run-cancel"),
    path("runs/<id:run_id>/outputs/<name:name>", runs.run_artifact, name="run-artifact"),
    path("campaigns/", campaigns.campaigns_page, name="campaigns"),
    path("campaigns/new/", campaigns.campaign_new, name="campaign-new"),
    path("campaigns/<id:campaign_id>/", campaigns.campaign_detail, name="campaign-detail"),
    path("campaigns/<id:campaign_id>/cancel", campaigns.campaign_cancel_view, name="campaign-cancel"),
    path("campaigns/<id:campaign_id>/retry", campaigns.campaign_retry_view, name="campaign-retry"),
    path("", home.home, name="home"),
    path("health/", health.health_page, name="health"),
    path("health.json", health.health_json, name="health-json"),
]
