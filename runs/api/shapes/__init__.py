"""The shapes of the answers the API builds by hand (Response({...})), for its OpenAPI schema.

Serializers that only describe: no view serializes with them. The viewsets of runs/api/ name them
in their @extend_schema; runs/tests/web/test_api_schema.py holds the schema to every route and
checks answers the API gives against what these say.
"""
