from django.urls import include, path

from runs.jobs.kinds import BUILD, RUN
from runs.views import builds, campaigns, cancel, compare, health, home, live, method, runs, shares, studies

urlpatterns = [
    path("runs/", runs.runs_page, name="runs"),
    path("runs/events", live.runs_events, name="runs-events"),
    path("runs/new/", runs.run_new, name="run-new"),
    path("runs/<id:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<id:run_id>/samples.json", runs.run_samples_json, name="run-samples-json"),
    path("runs/<id:run_id>/events", live.run_events, name="run-events"),
    path("runs/<id:run_id>/wait.json", runs.run_wait_json, name="run-wait-json"),
    path("runs/<id:run_id>/cancel", cancel.job_cancel_view, {"kind": RUN}, name="run-cancel"),
    path("runs/<id:run_id>/outputs/<name:name>", runs.run_artifact, name="run-artifact"),
    path("runs/<id:run_id>/method/accept", method.run_method_accept, name="run-method-accept"),
    path("method/", method.method_help, name="method-help"),
    path("builds/", builds.builds_page, name="builds"),
    path("builds/new/", builds.build_new, name="build-new"),
    path("builds/<id:build_id>/", builds.build_detail, name="build-detail"),
    path("builds/<id:build_id>/events", live.build_events, name="build-events"),
    path("builds/<id:build_id>/cancel", cancel.job_cancel_view, {"kind": BUILD}, name="build-cancel"),
    path("builds/<id:build_id>/remove", builds.build_remove_view, name="build-remove"),
    path("campaigns/", campaigns.campaigns_page, name="campaigns"),
    path("campaigns/new/", campaigns.campaign_new, name="campaign-new"),
    path("campaigns/<id:campaign_id>/", campaigns.campaign_detail, name="campaign-detail"),
    path("campaigns/<id:campaign_id>/cancel", campaigns.campaign_cancel_view, name="campaign-cancel"),
    path("campaigns/<id:campaign_id>/retry", campaigns.campaign_retry_view, name="campaign-retry"),
    path("campaigns/page-size/builds", studies.study_after_builds_new, name="study-after-builds-new"),
    path("campaigns/after-builds/<id:study_id>/", studies.study_after_builds_page, name="study-after-builds"),
    path("compare/", compare.compare_page, name="compare"),
    path("compare/data.json", compare.compare_data, name="compare-data"),
    path("compare/print/", compare.compare_report, name="compare-report"),
    path("compare/export.csv", compare.compare_export, {"fmt": "csv"}, name="compare-export-csv"),
    path("compare/export.json", compare.compare_export, {"fmt": "json"}, name="compare-export-json"),
    path("", include("runs.urls_devices")),
    path("", include("runs.urls_inventory")),
    path("", home.home, name="home"),
    path("health/", health.health_page, name="health"),
    path("health.json", health.health_json, name="health-json"),
    # Share links: one's own (an admin's: everybody's), and the shared pages, open to anyone with
    # the token. A comparison's page is at its token; a campaign's comparison under compare/.
    path("shares/", shares.share_list, name="shares"),
    path("shares/new", shares.share_new, name="share-new"),
    path("shares/<id:share_id>/revoke", shares.share_revoke_view, name="share-revoke"),
    path("s/<str:token>/", shares.shared_page, name="shared"),
    path("s/<str:token>/samples.json", shares.shared_samples, name="shared-samples"),
    path("s/<str:token>/data.json", shares.shared_data, {"of": "comparison"}, name="shared-data"),
    path("s/<str:token>/print/", shares.shared_report, {"of": "comparison"}, name="shared-report"),
    path(
        "s/<str:token>/export.csv", shares.shared_export, {"of": "comparison", "fmt": "csv"}, name="shared-export-csv"
    ),
    path(
        "s/<str:token>/export.json",
        shares.shared_export,
        {"of": "comparison", "fmt": "json"},
        name="shared-export-json",
    ),
    path("s/<str:token>/compare/", shares.shared_campaign_comparison, name="shared-campaign-compare"),
    path("s/<str:token>/compare/data.json", shares.shared_data, {"of": "campaign"}, name="shared-campaign-data"),
    path("s/<str:token>/compare/print/", shares.shared_report, {"of": "campaign"}, name="shared-campaign-report"),
    path(
        "s/<str:token>/compare/export.csv",
        shares.shared_export,
        {"of": "campaign", "fmt": "csv"},
        name="shared-campaign-export-csv",
    ),
    path(
        "s/<str:token>/compare/export.json",
        shares.shared_export,
        {"of": "campaign", "fmt": "json"},
        name="shared-campaign-export-json",
    ),
]
