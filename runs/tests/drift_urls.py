"""benchlab's URLs with the inventory's pages (runs.urls_inventory) until runs/urls.py includes
them: the drift tests and their web server use this."""

from django.urls import include, path

from benchlab.urls import urlpatterns as benchlab_urls

urlpatterns = [path("", include("runs.urls_inventory")), *benchlab_urls]
