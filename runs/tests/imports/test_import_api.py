"""POST /api/runs/import/: the import form over the API, with a token, the same checks and words."""

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.models import Device, Host, PgInstall, Run, RunOrigin
from runs.tests.api_schema import assert_answers_as_documented
from runs.tests.factories import make_user
from runs.tests.imports.test_import_page import lab, logs, setup, upload
from runs.tests.web.test_api import api_client

__all__ = ["lab"]  # a fixture, used by name


def test_an_operator_imports_pgbench_16_output_with_a_token(lab: tuple[Host, Device, PgInstall]) -> None:
    client = api_client(make_user("otto", "operator"))
    files: dict[str, Any] = {"summary": upload(16, "agg", "summary.txt"), "aggregate_logs": logs(16, "agg")}
    response = client.post("/api/runs/import/", setup(lab) | files, format="multipart")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert response.json() == {"id": run.pk, "origin": "imported", "url": f"http://testserver/api/runs/{run.pk}/"}
    assert_answers_as_documented("/api/runs/import/", "post", 201, response.json())
    assert (run.origin, run.tps, len(run.metrics["aggregate"])) == (RunOrigin.IMPORTED, 1190.673524, 3)
    read = client.get(f"/api/runs/{run.pk}/").json()
    assert (read["state"], read["origin"], read["imported_by"]) == ("done", "imported", run.imported_by_id)


def test_the_api_names_the_bad_line_as_the_page_does(lab: tuple[Host, Device, PgInstall]) -> None:
    client = api_client(make_user("otto", "operator"))
    bad = SimpleUploadedFile("summary.txt", b"scaling factor: 1\nnumber of clients: two\n")
    response = client.post("/api/runs/import/", setup(lab) | {"summary": bad}, format="multipart")
    assert response.status_code == 400
    said = response.json()["errors"]["summary"][0]["message"]
    assert said == "line 2 of summary.txt: expected 'number of clients: <n>', got 'number of clients: two'"
    assert_answers_as_documented("/api/runs/import/", "post", 400, response.json())
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_viewer_may_not_import_through_the_api() -> None:
    response = api_client(make_user("vera", "viewer")).post("/api/runs/import/", {}, format="multipart")
    assert response.status_code == 403 and "needs the operator role" in response.json()["detail"]
