"""The API's cancel of a job, one action for runs, PostgreSQL builds and fio baselines:
POST /api/<runs|builds|baselines>/<id>/cancel/ (runs.jobs.cancel does the cancel)."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from runs.jobs.cancel import JobRefused, job_cancel


class CancelAction(viewsets.GenericViewSet):
    """A job viewset's cancel: 403 with the reason for someone who may not (its permission,
    runs.cancel_run, is the viewset's required_permission), else the job as the list shows it."""

    cancelled_serializer: Any  # the serializer of the job's list

    @extend_schema(request=None)  # it answers with the viewset's list serializer (cancelled_serializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel it: a queued job at once, a running one is asked to stop (its worker stops it within
        a second or so). Answers the job as the list shows it; 403 with the reason for someone who may not."""
        job = self.get_object()
        try:
            job_cancel(job, by=request.user, request=request)
        except JobRefused as exc:
            raise PermissionDenied(str(exc)) from None
        job.refresh_from_db()
        return Response(self.cancelled_serializer(job).data)
