"""The page that says why a request was refused, for every view that refuses one."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def refused(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    """A page that says why the request was refused (400 bad input, 403 not allowed)."""
    heading = "Not allowed" if status == 403 else "That request cannot be answered"
    return render(request, "runs/refused.html", {"heading": heading, "message": message}, status=status)
