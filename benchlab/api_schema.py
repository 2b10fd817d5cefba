"""The API's OpenAPI 3 schema (drf-spectacular): its title, version and what it says of signing in.

Generated from the viewsets and serializers of runs/api/ (their @extend_schema annotations sit
beside them), served at /api/schema/ and shown at /api/docs/ (runs/views/api_reference.py).
"""

from typing import Any

from benchlab.version import benchlab_release

# Plain text, a paragraph a line: the reference page shows it as it is (no Markdown), as would Swagger UI.
DESCRIPTION = "\n\n".join(
    [
        "benchlab's JSON API: the inventory, runs, campaigns, schedules, comparisons, PostgreSQL builds, fio "
        "baselines, change points and their subscribers. What it allows is what the pages allow: the same roles, "
        "the same checks, the same messages.",
        "Sign in either way:\n"
        "- Token: make one on the API tokens page (/tokens/) and send it whole in a header, "
        "Authorization: Token <the token>. It acts as you, with your roles, until it expires or is revoked "
        "(django-rest-knox; benchlab keeps only its hash).\n"
        "- Session: a browser signed in to benchlab. Requests that write (POST, PATCH, DELETE) then also need "
        "the CSRF token, as the pages' forms send it.",
        "Reading needs the viewer role (runs.view_host); each action that writes names its permission (queueing: "
        "runs.queue_run, cancelling: runs.cancel_run). Without a sign-in the answer is 401, without the permission "
        "403, both JSON with a detail. Bad input is a 400 naming each field that is wrong and what it takes; "
        "nothing is written. Lists are paged with ?limit= and ?offset=.",
    ]
)

SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "benchlab API",
    "VERSION": benchlab_release(),
    "DESCRIPTION": DESCRIPTION,
    # Request and response shapes apart: fields a client cannot write are not offered as input.
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/",  # tags (the reference page's sections) from the path after it
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,  # Markdown lists of the values the enum itself names
    # A choice set by its own name: several models have a "state", and a run's failed_step is a RunState.
    "ENUM_NAME_OVERRIDES": {
        "RunStateEnum": "runs.models.RunState",
        "BuildStateEnum": "runs.models.BuildState",
        "BuildStepEnum": "runs.models.BuildStepName",
        "BaselineStateEnum": "runs.models.BaselineState",
        "ChangePointStateEnum": "runs.models.ChangePointState",
        "RoundOutcomeEnum": "runs.models.RoundOutcome",
    },
    # Anyone signed in (session or token) may read it: it tells what the API is, nothing stored.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}
