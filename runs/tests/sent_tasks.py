"""Tasks handed to workers, recorded instead of sent (runs.jobs.dispatch.send_task is the one
place benchlab sends a job's task): for tests with no worker to take them."""

from collections import defaultdict

import pytest

from runs.jobs import dispatch


def record_sent_tasks(monkeypatch: pytest.MonkeyPatch) -> defaultdict[str, list[int]]:
    """The job ids sent from now on, by task name ("runs.execute_run", "runs.reattach_run", …)."""
    sent: defaultdict[str, list[int]] = defaultdict(list)
    monkeypatch.setattr(dispatch, "send_task", lambda task, job_id: sent[task].append(job_id))
    return sent
