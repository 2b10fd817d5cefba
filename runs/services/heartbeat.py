"""Moved: a job's heartbeat is runs.jobs.heartbeat. The sweepers still import stale_after_s from
here; this module goes when they move to the job mechanism (issue 31)."""

from runs.jobs.heartbeat import stale_after_s

__all__ = ["stale_after_s"]
