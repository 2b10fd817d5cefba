"""Request checks that apply to every page, the admin's included."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

NUL_REFUSED = "The request holds a NUL character (\\x00), which no field of benchlab accepts."


class RefuseNulCharactersMiddleware:
    """A NUL character in a URL, query string or form field is answered with 400.

    PostgreSQL text cannot hold one, so a NUL reaching a query is a server error, and the
    admin's filters and forms (Django's own) pass them on. No value benchlab takes needs one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not _holds_nul(request):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": NUL_REFUSED}, status=400)
        context = {"heading": "That request cannot be answered", "message": NUL_REFUSED}
        return render(request, "runs/refused.html", context, status=400)


def _holds_nul(request: HttpRequest) -> bool:
    if "\x00" in request.path:
        return True
    for query in (request.GET, request.POST):
        for key, values in query.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                return True
    return False
