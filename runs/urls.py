from django.urls import path

from runs.views import health, home

urlpatterns = [
    path("", home.home, name="home"),
    path("health/", health.health_page, name="health"),
    path("health.json", health.health_json, name="health-json"),
]
