"""A link to the comparison of two rounds of one configuration (runs.compare.query builds it)."""

from collections.abc import Sequence

from django.urls import reverse

from runs.compare.query import ComparisonQuery


def rounds_comparison_path(before: Sequence[int], after: Sequence[int]) -> str:
    """/compare/ with the runs of the round before and of the round after. Both rounds have one
    specification, which a comparison's default grouping would make one group: grouped by seed
    instead (each repetition its own), with the last run before and the first after overlaid."""
    query = ComparisonQuery(run_ids=(*before, *after), group_by=("random_seed",), show=(before[-1], after[0]))
    return reverse("compare") + "?" + "&".join(f"{key}={value}" for key, value in query.as_params().items())
