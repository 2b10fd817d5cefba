"""What the queueing tests of the run's options share: a lab of one host that can take a run, its
queue form's fields, and the two ways a refusal must look (beside its field in the form, named in
the API's 400) with nothing written either way."""

from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from runs.models import Host, Run
from runs.tests.factories import make_device, make_host, make_pg_install, make_user, run_form_fields


def lab1() -> Host:
    """A host with a wipeable 1 GiB device and a PostgreSQL install."""
    host = make_host(name="lab1")
    make_device(host, wipe_allowed=True, capacity_bytes=2**30)
    make_pg_install(host)
    return host


def form(host: Host, **changes: object) -> dict[str, object]:
    """The queue form's fields for a run on the host's one device and install, with changes."""
    return run_form_fields(host, host.devices.get(), host.pg_installs.get(), **changes)


def assert_the_form_refuses(client: Client, body: dict[str, object], field: str, message: str) -> None:
    response = client.post(reverse("run-new"), body)

    assert response.status_code == 400
    errors = response.context["form"].errors[field]
    assert any(message in error for error in errors), errors
    assert not Run.objects.exists()


def assert_the_api_refuses(body: dict[str, object], field: str, message: str) -> None:
    """As an operator: the API's own defaults leave the rate limit and seed unset."""
    api = APIClient()
    api.force_authenticate(make_user("otto", "operator"))

    response = api.post("/api/runs/", body, format="json")

    assert response.status_code == 400, response.json()
    assert any(message in error for error in response.json()[field]), response.json()
    assert not Run.objects.exists()
