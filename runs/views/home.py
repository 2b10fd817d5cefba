from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runs.selectors import inventory_hosts


@permission_required("runs.view_host", raise_exception=True)
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/home.html", {"hosts": inventory_hosts()})
