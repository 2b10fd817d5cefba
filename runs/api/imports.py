"""POST /api/runs/import/ (issue 35): the import page's form over the API, as multipart/form-data
with the same field names (summary, progress, transaction_logs, aggregate_logs and the setup's),
checked by the same form (runs.forms.imports) and stored by the same service."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from runs.api.permissions import READ
from runs.api.shapes.common import REFUSED
from runs.api.shapes.imports import RunImportedSerializer, RunImportRefusedSerializer, RunImportRequestSerializer
from runs.forms.imports import RunImportForm
from runs.imports.services.run_import import run_import
from runs.views.imports import IMPORT_PERMISSION, REFUSAL


class CanImport(BasePermission):
    message = REFUSAL

    def has_permission(self, request: Any, view: Any) -> bool:
        """Importing needs the operator's permission; asking what the endpoint takes (OPTIONS), or a
        method it does not answer (then 405), a viewer's, as runs.api.permissions.RolePermission has it."""
        if not (request.user and request.user.is_authenticated):
            return False
        reads = request.method in SAFE_METHODS or not hasattr(view, request.method.lower())
        return bool(request.user.has_perm(READ if reads else IMPORT_PERMISSION))


class RunImportView(APIView):
    permission_classes = [CanImport]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": RunImportRequestSerializer},
        responses={201: RunImportedSerializer, 400: RunImportRefusedSerializer, 403: REFUSED},
        operation_id="runs_import",
    )
    def post(self, request: Request) -> Response:
        """pgbench's output imported as a run marked "imported", checked like the import page's form."""
        form = RunImportForm(request.data, request.FILES)
        if not form.is_valid() or form.output is None:
            # Each bad file named with its line under its field, as the page shows it.
            return Response({"errors": form.errors.get_json_data()}, status=400)
        run = run_import(
            run=form.save(commit=False), output=form.output, files=form.files_read, user=request.user, request=request
        )
        url = reverse("api:run-detail", args=[run.pk], request=request)
        return Response({"id": run.pk, "origin": run.origin, "url": url}, status=201, headers={"Location": url})
