"""/api/schema/: drf-spectacular's schema view (YAML, or JSON with ?format=json), its refusals in
JSON like the rest of the API's rather than in the YAML a schema is served as."""

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response


class SchemaView(SpectacularAPIView):
    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        # The content negotiation ran before the permissions: its YAML renderer would write a 401 as YAML.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response
