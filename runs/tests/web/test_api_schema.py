"""The API's OpenAPI schema: every route of the API's router and every method it allows is in it
and nothing else is, every body it takes and every answer has a shape with fields (the few that
cannot are listed with why), it validates with no warning, and it is served to anyone signed in."""

import json
import re
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from rest_framework.routers import APIRootView
from rest_framework.test import APIClient

from runs.api import urls as api_urls
from runs.api.schema_view import SchemaView
from runs.api.urls import router
from runs.tests.api_schema import METHODS, operations, resolved
from runs.tests.factories import make_user
from runs.tests.web.test_api import api_client
from runs.views.api_reference import api_schema

# POSTs that take nothing: the action is the whole request.
NO_BODY = {
    ("/api/runs/{id}/cancel/", "post"): "cancel names its job in the path",
    ("/api/builds/{id}/cancel/", "post"): "cancel names its job in the path",
    ("/api/baselines/{id}/cancel/", "post"): "cancel names its job in the path",
    ("/api/builds/{id}/remove/", "post"): "remove names its build in the path",
    ("/api/schedules/{id}/run-now/", "post"): "run-now names its schedule in the path",
}
# Routed, and always refused with a 400 that says what to use instead.
NO_SUCCESS = {
    ("/api/schedules/{id}/", "put"): "a schedule is changed with PATCH",
    ("/api/change-points/{id}/", "put"): "a change point is triaged with PATCH",
}
# Answers that are text, not JSON objects.
TEXT_ANSWERS = {
    ("/api/comparisons/summary/", "get", "text/csv"): "?file=csv: the summary table as CSV",
    ("/api/comparisons/series/", "get", "text/csv"): "?file=csv: the per-second rows as CSV",
}
TYPED = ("type", "$ref", "allOf", "oneOf", "anyOf", "enum")


def _openapi_variable(match: re.Match[str]) -> str:
    """A named group of a route's regex as OpenAPI writes the path's variable (DRF's pk is its id)."""
    name = match.group(1)
    return "{id}" if name == "pk" else "{" + name + "}"


def router_operations() -> set[tuple[str, str]]:
    """(path as OpenAPI writes it, method) for every route of runs.api.urls' router."""
    found = set()
    for pattern in router.urls:
        actions = getattr(pattern.callback, "actions", None)
        regex = str(pattern.pattern)
        if actions is None or "(?P<format>" in regex:  # the API's root page; the .json suffixes
            continue
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", _openapi_variable, regex)
        allowed = set(pattern.callback.cls.http_method_names) & set(METHODS)  # HEAD is GET's, OPTIONS DRF's
        found |= {(f"/api/{path.strip('^$')}", method) for method in actions if method in allowed}
    return found | view_operations()


def view_operations() -> set[tuple[str, str]]:
    """(path, method) of the API's views beside the router (POST /api/runs/import/): every method
    their class answers; the schema's own view and the reference page are not operations."""
    found = set()
    for pattern in api_urls.urlpatterns:
        view = getattr(pattern, "callback", None)
        cls = getattr(view, "cls", None)
        if cls is None or getattr(view, "actions", None) is not None or issubclass(cls, SchemaView | APIRootView):
            continue
        found |= {(f"/api/{pattern.pattern}", method) for method in METHODS if hasattr(cls, method)}
    return found


def has_fields(schema: dict) -> bool:
    node = resolved(schema)
    if node.get("type") == "array":
        return has_fields(node["items"])
    return bool(node.get("properties"))


def test_every_route_and_method_of_the_api_is_in_the_schema_and_nothing_else() -> None:
    documented = {(path, method) for path, method, _ in operations()}

    assert router_operations() - documented == set()
    assert documented - router_operations() == set()
    assert len(documented) > 40  # the router was read at all


def test_every_body_the_api_takes_has_its_fields() -> None:
    for path, method, operation in operations():
        if method not in ("post", "put", "patch"):
            assert "requestBody" not in operation, (path, method)
        elif (path, method) in NO_BODY:
            assert "requestBody" not in operation, f"{method} {path} is listed as taking no body: {operation}"
        else:
            content = operation.get("requestBody", {}).get("content")
            assert content, f"{method} {path} documents no request body"
            for media_type, body in content.items():
                assert has_fields(body["schema"]), (path, method, media_type, body)


def test_every_operation_answers_a_shape_with_fields() -> None:
    for path, method, operation in operations():
        successes = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        if (path, method) in NO_SUCCESS:
            assert not successes and operation.get("deprecated") and "400" in operation["responses"]
            continue
        assert successes, f"{method} {path} documents no success"
        for code, answer in successes.items():
            if code == "204":
                assert "content" not in answer, (path, method)
                continue
            for media_type, body in answer["content"].items():
                if (path, method, media_type) in TEXT_ANSWERS:
                    assert body["schema"] == {"type": "string"}
                else:
                    assert has_fields(body["schema"]), (path, method, code, media_type, body)


def test_every_field_of_every_shape_has_a_type() -> None:
    untyped = [
        f"{name}.{field}"
        for name, shape in api_schema()["components"]["schemas"].items()
        for field, schema in shape.get("properties", {}).items()
        if not any(key in schema for key in TYPED)
    ]

    assert untyped == []


def test_the_listed_exceptions_are_all_still_routes() -> None:
    routes = router_operations()

    assert set(NO_BODY) | set(NO_SUCCESS) <= routes
    assert {(path, method) for path, method, _ in TEXT_ANSWERS} <= routes


def test_the_schema_validates_with_no_warning(tmp_path: Path) -> None:
    # --fail-on-warn: drf-spectacular raises on any warning or error (a view it cannot read, a name clash).
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))

    schema = yaml.safe_load((tmp_path / "schema.yml").read_text())
    assert schema["openapi"].startswith("3.") and schema["info"]["title"] == "benchlab API"
    assert "Authorization: Token" in schema["info"]["description"]
    assert set(schema["components"]["securitySchemes"]) == {"knoxApiToken", "cookieAuth"}


@pytest.mark.django_db
def test_anyone_signed_in_reads_the_schema_by_token_as_yaml_or_json() -> None:
    client = api_client(make_user("nobody"))  # signed in, with no role

    as_yaml = client.get("/api/schema/")
    as_json = client.get("/api/schema/?format=json")

    assert as_yaml.status_code == 200 and as_yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    assert "/api/runs/" in yaml.safe_load(as_yaml.content)["paths"]
    assert as_json.status_code == 200 and "/api/runs/{id}/cancel/" in json.loads(as_json.content)["paths"]


@pytest.mark.django_db
def test_a_session_reads_the_schema_and_no_sign_in_is_a_401_as_elsewhere_in_the_api() -> None:
    session = APIClient()
    session.force_login(make_user("vera", "viewer"))

    anonymous = APIClient().get("/api/schema/")

    assert session.get("/api/schema/?format=json").status_code == 200
    assert anonymous.status_code == 401 and anonymous["Content-Type"] == "application/json"
    assert anonymous.json() == APIClient().get("/api/runs/").json()
