"""A run's or a campaign's notes and tags: the form (its owner's and admins'), and who may."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from runs.forms.notes import NotesForm
from runs.models import Campaign, Run
from runs.notes.rules import NotesRefused
from runs.notes.services.notes import Annotatable, notes_refusal, notes_set

KINDS: dict[str, type[Run] | type[Campaign]] = {"run": Run, "campaign": Campaign}


@require_http_methods(["GET", "HEAD", "POST"])
@permission_required("runs.view_host", raise_exception=True)
def notes_edit(request: HttpRequest, kind: str, target_id: int) -> HttpResponse:
    model = KINDS[kind]
    target: Annotatable = get_object_or_404(  # type: ignore[assignment]  # a Run or a Campaign, by kind
        model.objects.select_related(*_owner_fields(kind)), pk=target_id
    )
    refusal = notes_refusal(request.user, target)
    back = reverse(f"{kind}-detail", args=[target.pk])
    form = NotesForm(request.POST if request.method == "POST" else None, initial=_initial(target))
    if request.method == "POST" and refusal is None and form.is_valid():
        try:
            notes_set(target=target, actor=request.user, request=request, **form.cleaned_data)
            return redirect(f"{back}#notes")
        except NotesRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
    context = {"form": form, "kind": kind, "target": target, "refusal": refusal, "back": back}
    status = 403 if request.method == "POST" and refusal else 400 if form.errors else 200
    return render(request, "runs/notes_form.html", context, status=status)


def _owner_fields(kind: str) -> tuple[str, ...]:
    return ("queued_by", "imported_by") if kind == "run" else ("created_by",)


def _initial(target: Annotatable) -> dict[str, str]:
    return {"note": target.note, "tags": ", ".join(target.tags)}
