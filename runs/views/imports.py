"""The import page (issue 35): pgbench output uploaded with its setup becomes an imported run."""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from runs.forms.imports import RunImportForm
from runs.imports.services.run_import import run_import

# Importing adds a run as queueing one does: the same permission, the operator's.
IMPORT_PERMISSION = "runs.queue_run"
REFUSAL = "Importing pgbench output adds a run, which needs the operator role (the permission to queue runs)."


@require_http_methods(["GET", "HEAD", "POST"])
def run_import_page(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(IMPORT_PERMISSION):
        raise PermissionDenied(REFUSAL)
    if request.method != "POST":
        return render(request, "runs/run_import.html", {"form": RunImportForm()})
    form = RunImportForm(request.POST, request.FILES)
    if not form.is_valid() or form.output is None:
        # The form again, each bad file named with its line beside its field; 400 tells scripts it was refused.
        return render(request, "runs/run_import.html", {"form": form}, status=400)
    run = run_import(
        run=form.save(commit=False), output=form.output, files=form.files_read, user=request.user, request=request
    )
    return redirect("run-detail", run_id=run.pk)
