"""The API reference page (/api/docs/): for anyone signed in, every operation of the schema with
its parameters, body and answers, every shape they name linked to its table; an anonymous visitor
is sent to sign in like on every other page (the API itself answers 401: test_api_schema)."""

import re

import pytest
from django.urls import reverse

from runs.api.reference import api_reference, type_tokens, unwrapped
from runs.tests.api_schema import operations
from runs.tests.conftest import ClientFactory
from runs.views.api_reference import api_schema


def test_a_type_reads_as_words_with_its_shapes_linked() -> None:
    listed = {"type": "array", "items": {"$ref": "#/components/schemas/Run"}}
    nullable = {"allOf": [{"$ref": "#/components/schemas/Summary"}], "nullable": True}

    assert type_tokens(listed) == (("list of ", ""), ("Run", "Run"))
    assert type_tokens(nullable) == (("Summary", "Summary"), (" or null", ""))
    assert type_tokens({"type": "string", "format": "date-time"}) == (("string (date-time)", ""),)
    assert type_tokens({"type": "object", "additionalProperties": {"type": "integer"}}) == (
        ("object of ", ""),
        ("integer", ""),
    )
    assert type_tokens({"enum": ["a", None]}) == (("one of 'a', null", ""),)


def test_the_reference_has_every_operation_of_the_schema_once() -> None:
    reference = api_reference(api_schema())

    listed = [(op.path, op.method.lower()) for section in reference.sections for op in section.operations]

    assert sorted(listed) == sorted((path, method) for path, method, _ in operations())
    runs = next(section for section in reference.sections if section.tag == "runs")
    create = next(op for op in runs.operations if (op.method, op.path) == ("POST", "/api/runs/"))
    assert create.request[0].type == (("RunRequest", "RunRequest"),)
    assert [(body.status, body.type) for body in create.responses][:1] == [("201", (("Run", "Run"),))]


@pytest.mark.django_db
def test_a_viewer_reads_the_reference_and_every_shape_it_links_is_on_it(client_for: ClientFactory) -> None:
    response = client_for("vera").get("/api/docs/")

    page = response.content.decode()
    assert response.status_code == 200
    assert '<span class="api-method api-method-post">POST</span> <code>/api/runs/</code>' in page
    assert 'id="shape-RunRequest"' in page and "Authorization: Token" in page
    linked = set(re.findall(r'href="#([^"]+)"', page))
    anchors = set(re.findall(r'id="([^"]+)"', page))
    assert linked - anchors == set() and len(linked) > 100
    assert "<script" not in page  # nothing for the Content-Security-Policy to allow


@pytest.mark.django_db
def test_anyone_signed_in_reads_it_and_an_anonymous_visitor_is_sent_to_sign_in(client_for: ClientFactory) -> None:
    anonymous = client_for(None).get("/api/docs/")

    assert client_for("nora").get("/api/docs/").status_code == 200  # no role: the schema is no secret
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"{reverse('login')}?next=/api/docs/"


@pytest.mark.django_db
def test_the_tokens_page_links_the_reference_and_the_schema(client_for: ClientFactory) -> None:
    page = client_for("vera").get("/tokens/").content.decode()

    assert f'href="{reverse("api:reference")}"' in page and f'href="{reverse("api:schema")}"' in page


def test_text_wrapped_in_the_source_wraps_on_the_page_and_keeps_its_paragraphs_and_items() -> None:
    assert unwrapped("Queue a build from\na source.\n\nSign in:\n- Token: a\nheader.\n- Session") == (
        "Queue a build from a source.\n\nSign in:\n- Token: a header.\n- Session"
    )
