from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.bench.selectors.run_page import inventory_hosts


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def home(request: HttpRequest) -> HttpResponse:
    # The runs a host is busy with or must be cleaned up after, for its state line: in the same query.
    hosts = inventory_hosts().select_related("claimed_by", "cleanup_pending_for")
    return render(request, "runs/home.html", {"hosts": hosts})
