"""A link to the comparison of two rounds of one configuration (runs.compare.query builds it), and a
path as an absolute URL for notifications (settings.SITE_URL, from BENCHLAB_SITE_URL)."""

from collections.abc import Sequence

from django.conf import settings
from django.urls import reverse

from runs.compare.query import ComparisonQuery


def rounds_comparison_path(before: Sequence[int], after: Sequence[int]) -> str:
    """/compare/ with the runs of the round before and of the round after. Both rounds have one
    specification, which a comparison's default grouping would make one group: grouped by seed
    instead (each repetition its own), with the last run before and the first after overlaid."""
    query = ComparisonQuery(run_ids=(*before, *after), group_by=("random_seed",), show=(before[-1], after[0]))
    return reverse("compare") + "?" + "&".join(f"{key}={value}" for key, value in query.as_params().items())


def site_url(path: str) -> str | None:
    """The path on the site's address (BENCHLAB_SITE_URL); None when that is not set: a worker sends
    notifications outside any request, so it knows the site's address only from there."""
    return f"{settings.SITE_URL}{path}" if settings.SITE_URL else None
