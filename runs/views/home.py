from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.selectors import inventory_hosts


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/home.html", {"hosts": inventory_hosts()})
