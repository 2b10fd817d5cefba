"""How the API's OpenAPI schema describes an operation (settings: REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS)."""

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc

from runs.common.params import MAX_ID, IdConverter

ID_PATTERN = f"^{IdConverter.regex}$"


class ActionDocSchema(AutoSchema):
    """drf-spectacular's, describing an operation by its action's own docstring alone.

    Its default falls back to the viewset's docstring, which inspect.getdoc inherits from the
    first base that has one: every create, list and retrieve would then be described by what a
    mixin says of itself (QueueThrottled's note on throttles), which describes no operation."""

    def get_description(self) -> str:
        action = getattr(self.view, "action", None) or self.method.lower()
        return get_doc(getattr(self.view, action, None))

    def _resolve_path_parameters(self, variables: Any) -> list[dict[str, Any]]:
        """An id in a path (IdConverter's digits, up to bigint's 19) is an integer, as the bodies' ids are."""
        parameters: list[dict[str, Any]] = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            if parameter["schema"].get("pattern") == ID_PATTERN:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
        return parameters
