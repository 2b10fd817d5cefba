"""A host's page: what it is (the inventory's facts), its devices and installs, its recent runs,
and what changed on it between runs (drift)."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.inventory.selectors import host_page


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def host_detail(request: HttpRequest, host_id: int) -> HttpResponse:
    page = host_page(host_id)
    return render(request, "runs/host_detail.html", {"page": page, "host": page.host})
