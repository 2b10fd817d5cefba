"""The API's OpenAPI schema for tests: its operations, a shape resolved, and an answer checked
against what the schema says of it (jsonschema, every object closed to keys it does not name)."""

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the pinned dependencies

from runs.views.api_reference import api_schema

METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in api_schema()["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def resolved(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """A schema with its $ref (or allOf of one $ref) followed."""
    while True:
        if "$ref" in node:
            node = api_schema()["components"]["schemas"][node["$ref"].removeprefix(REF_PREFIX)]
        elif len(node.get("allOf", ())) == 1:
            node = node["allOf"][0]
        else:
            return node


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's dialect as JSON Schema: nullable as a null alternative, objects that name their
    fields closed to others (an answer with a key the schema does not document fails)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _json_schema(value) for key, value in node.items() if key not in ("nullable", "readOnly")}
    if "$ref" in converted:
        converted["$ref"] = "#/definitions/" + converted["$ref"].removeprefix(REF_PREFIX)
    if "properties" in converted and "additionalProperties" not in converted:
        converted["additionalProperties"] = False
    if node.get("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def assert_answers_as_documented(path: str, method: str, status: int, data: Any) -> None:
    """`data`, the JSON the API answered, is what the schema says `method path` answers with `status`."""
    answer = api_schema()["paths"][path][method]["responses"][str(status)]
    shape = answer["content"]["application/json"]["schema"]
    definitions = {name: _json_schema(schema) for name, schema in api_schema()["components"]["schemas"].items()}
    jsonschema.validate(data, _json_schema(shape) | {"definitions": definitions})
