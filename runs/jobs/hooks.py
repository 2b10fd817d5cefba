"""What follows a job's end, registered by the side that cares about it.

A run's end may call for a campaign's next round, a build's end for the study waiting on it
(runs.campaigns.services.hooks registers both when benchlab starts: runs.apps). The kinds call
`job_ended` and know nothing of campaigns; a new follow-up is one more `on_job_end`."""

import logging
from collections.abc import Callable
from typing import Any

from django.db import models

from runs.jobs.kinds import kind_of

log = logging.getLogger(__name__)

EndHook = Callable[[Any], object]  # given the job that ended, of the kind it was registered for
_HOOKS: dict[str, list[EndHook]] = {}


def on_job_end(kind: str, hook: EndHook) -> None:
    """Call `hook(job)` whenever a job of `kind` has ended (registering it again changes nothing)."""
    hooks = _HOOKS.setdefault(kind, [])
    if hook not in hooks:
        hooks.append(hook)


def job_ended(job: models.Model) -> None:
    """Call what follows the end of `job`. Each hook on its own: one that fails is logged, and the
    job has ended whatever becomes of what follows it (its page says what did)."""
    kind = kind_of(job)
    for hook in _HOOKS.get(kind.name, []):
        try:
            hook(job)
        except Exception:
            log.exception("%s %s: what follows its end failed (%s)", kind.name, job.pk, getattr(hook, "__name__", hook))
