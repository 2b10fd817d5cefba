from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern, URLResolver, path
from rest_framework.routers import DefaultRouter

from runs.api.baselines import BaselineViewSet
from runs.api.builds import BuildViewSet
from runs.api.campaigns import CampaignViewSet
from runs.api.change_points import ChangePointViewSet, SubscriberViewSet
from runs.api.comparisons import ComparisonViewSet
from runs.api.imports import RunImportView
from runs.api.schedules import ScheduleViewSet
from runs.api.schema_view import SchemaView
from runs.api.views import DeviceViewSet, HostViewSet, PgInstallViewSet, RunViewSet
from runs.views.api_reference import api_reference_page

router = DefaultRouter()
router.register("hosts", HostViewSet)
router.register("devices", DeviceViewSet)
router.register("pg-installs", PgInstallViewSet)
router.register("runs", RunViewSet, basename="run")
router.register("campaigns", CampaignViewSet, basename="campaign")
router.register("comparisons", ComparisonViewSet, basename="comparison")
router.register("builds", BuildViewSet, basename="build")
router.register("baselines", BaselineViewSet, basename="baseline")
router.register("schedules", ScheduleViewSet, basename="schedule")
router.register("change-points", ChangePointViewSet, basename="change-point")
router.register("subscribers", SubscriberViewSet, basename="subscriber")


def _token_friendly(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    """API views authenticate themselves (token or session) and answer 401/403 in JSON,
    so the site-wide login redirect must not catch them first."""
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = login_not_required(pattern.callback)
    return patterns


app_name = "api"
urlpatterns = [
    # The import first: the router's runs/<pk>/ would take "import" for a run's id. The OpenAPI
    # schema (YAML; ?format=json: JSON), for anyone signed in (benchlab/api_schema.py).
    *_token_friendly(
        [
            path("runs/import/", RunImportView.as_view(), name="run-import"),
            *router.urls,
            path("schema/", SchemaView.as_view(), name="schema"),
        ]
    ),
    # Its reference page, a page like the others: an anonymous visitor is sent to sign in.
    path("docs/", api_reference_page, name="reference"),
]
