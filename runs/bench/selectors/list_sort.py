"""The run list's sort orders: by queued or started time, steady-state tps, server host or state,
either way, chosen in the filter form or by clicking a column's header.

Every order ends with the queue time and the id, so it is total and stable: a run is on exactly
one page however the pages are walked. Runs without the value (not started yet, no tps yet) come
last either way: "highest tps first" should not open with the runs that have none.

By tps, a cancelled run's figure comes after every whole one, either way: it is the mean of the
seconds measured before pgbench was stopped (its first seconds, often still settling), not of the
planned duration, so ranking it among finished runs would compare unlike things. Its cell says
"partial" (templates/runs/run_list.html), which is why it sits below a lower whole figure.
"""

from dataclasses import dataclass

from django.db.models import Case, F, IntegerField, QuerySet, Value, When
from django.db.models.expressions import OrderBy
from django.http import QueryDict

from runs.models import Run, RunState

DEFAULT_SORT = "-queued"

# name -> (the column it orders by, and how the form's select list says it ascending and
# descending). "-name" sorts descending.
_ORDERS: dict[str, tuple[str, str, str]] = {
    "queued": ("created_at", "oldest queued first", "newest queued first"),
    "started": ("started_at", "earliest started first", "latest started first"),
    "tps": ("steady_tps_mean", "lowest tps first", "highest tps first"),
    "host": ("server_host__name", "server host A to Z", "server host Z to A"),
    "state": ("state_order", "state, queued first", "state, ended first"),
}
# The direction a header click sorts in first: newest, latest and highest first; names A to Z.
_FIRST_DESCENDING = {"queued", "started", "tps"}
# The order a run goes through its states, for sorting by state (not by their names).
_STATE_ORDER = [state.value for state in RunState]


def sort_choices() -> list[tuple[str, str]]:
    """The form's select list; the default first, as "" (a URL without ?sort= sorts by it)."""
    choices = [("", _ORDERS["queued"][2])]
    for name, (_, ascending, descending) in _ORDERS.items():
        pairs = [(f"-{name}", descending), (name, ascending)]
        if name not in _FIRST_DESCENDING:
            pairs.reverse()
        choices += [(value, label) for value, label in pairs if value != DEFAULT_SORT]
    return choices


def sort_runs(runs: QuerySet[Run], sort: str) -> QuerySet[Run]:
    """`runs` in the order `sort` names (a value of sort_choices(); "" for the default)."""
    descending = (sort or DEFAULT_SORT).startswith("-")
    name = (sort or DEFAULT_SORT).removeprefix("-")
    column = _ORDERS[name][0]
    if column == "state_order":
        whens = [When(state=state, then=Value(index)) for index, state in enumerate(_STATE_ORDER)]
        runs = runs.annotate(state_order=Case(*whens, default=Value(len(_STATE_ORDER)), output_field=IntegerField()))
    first: OrderBy = F(column).desc(nulls_last=True) if descending else F(column).asc(nulls_last=True)
    if name == "tps":
        return _by_tps(runs, first)
    if name == "queued":  # the queue time decides alone; the id only between runs queued together
        return runs.order_by(first, "-id" if descending else "id")
    return runs.order_by(first, "-created_at", "-id")


def _by_tps(runs: QuerySet[Run], by_value: OrderBy) -> QuerySet[Run]:
    """Whole figures first, then cancelled runs' partial ones, then runs without one; by the
    value within each, either way."""
    completeness = Case(
        When(steady_tps_mean__isnull=True, then=Value(2)),
        When(state=RunState.CANCELLED, then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )
    return runs.annotate(tps_completeness=completeness).order_by("tps_completeness", by_value, "-created_at", "-id")


@dataclass(frozen=True)
class SortHeader:
    """A sortable column's header: where clicking it goes, and how the list is sorted by it now."""

    href: str
    aria_sort: str  # "ascending", "descending" or "none" (WAI-ARIA's values for a <th>)
    arrow: str  # "▲", "▼" or "" beside the column's name
    title: str  # what clicking does


def sort_headers(query: QueryDict, sort: str) -> dict[str, SortHeader]:
    """Per sortable column, its header's link: the same filters and page size, the first page,
    sorted by that column (the other way round if it is the current order)."""
    current = sort or DEFAULT_SORT
    headers = {}
    for name, (_, ascending, descending) in _ORDERS.items():
        first = f"-{name}" if name in _FIRST_DESCENDING else name
        other = name if first.startswith("-") else f"-{name}"
        target = other if current == first else first
        state = "none"
        if current.removeprefix("-") == name:
            state = "descending" if current.startswith("-") else "ascending"
        link = query.copy()
        link.pop("page", None)  # another order starts again at its first page
        link.pop("sort", None)
        if target != DEFAULT_SORT:
            link["sort"] = target
        arrow = {"ascending": " ▲", "descending": " ▼"}.get(state, "")
        title = f"Sort: {descending if target.startswith('-') else ascending}"
        headers[name] = SortHeader(f"?{link.urlencode()}", state, arrow, title)
    return headers
