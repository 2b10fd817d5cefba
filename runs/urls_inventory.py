"""The inventory's own pages (beside its admin): a host's page. Included from runs/urls.py."""

from django.urls import path

from runs.views import hosts

urlpatterns = [
    path("hosts/<id:host_id>/", hosts.host_detail, name="host-detail"),
]
