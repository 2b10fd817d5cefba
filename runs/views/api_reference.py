"""The API's reference page (/api/docs/): the OpenAPI schema /api/schema/ serves, as a page of
benchlab's own, with no script (runs.api.reference reads the schema into sections and shapes)."""

import functools
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.settings import spectacular_settings

from runs.api.reference import api_reference


@functools.cache
def api_schema() -> dict[str, Any]:
    """The schema /api/schema/ serves; generated once a process, since only the code changes it."""
    generator = spectacular_settings.DEFAULT_GENERATOR_CLASS()
    return generator.get_schema(request=None, public=spectacular_settings.SERVE_PUBLIC)


@require_safe
def api_reference_page(request: HttpRequest) -> HttpResponse:
    """For anyone signed in, as the schema itself: it tells what the API is, nothing stored."""
    return render(request, "runs/api_reference.html", {"reference": api_reference(api_schema())})
