"""The home page of a signed-in reader: recent runs and campaigns (their own first), what each host
is doing now and what waits for it, the next step for their role (a three-step start in a lab
with no runs yet), and the inventory below. The reads are runs/bench/selectors/home.py."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from runs.bench.selectors.home import admins_to_ask, hosts_now, recent_campaigns, recent_runs
from runs.bench.selectors.run_page import inventory_hosts
from runs.common.roles import role_of, you_are


@require_safe
@permission_required("runs.view_host", raise_exception=True)
def home(request: HttpRequest) -> HttpResponse:
    # The runs a host is busy with or must be cleaned up after, for its state line: in the same query.
    hosts = list(inventory_hosts().select_related("claimed_by", "cleanup_pending_for"))
    runs = recent_runs(request.user)
    context = {
        "hosts": hosts,
        "now": hosts_now(hosts),
        "runs": runs,
        # A lab with no runs has no campaign with any: its page is the three-step start.
        "campaigns": recent_campaigns(request.user) if runs.any else None,
        "role": role_of(request.user),
        "you_are": you_are(request.user),
        # Whom a viewer asks for the operator role; an operator or admin has no one to ask.
        "ask": admins_to_ask() if not request.user.has_perm("runs.queue_run") else [],
    }
    return render(request, "runs/home.html", context)
