"""The admin's lists answer a filter or selection they cannot use with 400, not a 500.

Django's changelist passes query-string filters (`?address=junk`, `?at__year=99999999999`)
and selected ids (`_selected_action=abc`) to the database layer, which raises on values of
the wrong kind. Those are the request's mistakes.
"""

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import DataError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

BAD_VALUE_ERRORS = (ValueError, TypeError, OverflowError, ValidationError, DataError)


class AnswersBadLookups(admin.ModelAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        try:
            response = super().changelist_view(request, extra_context)
            if hasattr(response, "render"):
                response.render()  # a lazy page would raise later, outside this try
        except BAD_VALUE_ERRORS as exc:
            return HttpResponseBadRequest(
                f"This list cannot be filtered or acted on with that value: {exc}", content_type="text/plain"
            )
        return response
