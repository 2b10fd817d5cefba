"""The run list's filters (runs.bench.filters.RunFilter, which the API and comparisons read too),
sort order and paging: a form that checks the query string, and the page of runs it selects. The list query
loads only the columns the table shows; a run's JSON (summary, metrics, environment) and long
texts can be megabytes each, and 10,000 runs must list in well under 200 ms.
"""

from typing import Any

from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Prefetch, QuerySet
from django.db.models.functions import Substr
from django.http import QueryDict
from django.utils.http import urlencode

from runs.bench.filters import RunFilter, RunFiltersForm, run_filter_names
from runs.bench.selectors.list_rows import annotate_progress
from runs.bench.selectors.list_sort import sort_choices, sort_runs
from runs.common.paging import MAX_PAGE, page_or_last
from runs.models import Device, Run, RunClient

PER_PAGE_CHOICES = (25, 50, 100, 200)
DEFAULT_PER_PAGE = 50
PAGING = ("sort", "per_page", "page")
NOTE_SHOWN = 40  # characters of a run's note in its row

# What the table shows, and nothing else (no JSON, no failure output, no script, no settings).
LIST_COLUMNS = (
    "id",
    "state",
    "filesystem",
    "mount_options",
    "tags",
    "driver",
    "workload",
    "scale",
    "sysbench_tables",
    "sysbench_table_size",
    "clients",
    "threads",
    "duration_s",
    "warmup_s",
    "warmup_run_s",
    "warmup_run_clients",
    "steady_tps_mean",
    "memory_tier",  # the method labels (templates/runs/_method_badges.html)
    "durable",
    "steady",
    "created_at",
    "started_at",
    "finished_at",
    "campaign_id",
    "server_host__name",
    "device__name",
    "pg_install__version",
    "pg_install__block_size",
    "queued_by__username",
    "origin",  # an imported run's badge, and who imported it (runs.bench.selectors.list_rows.imported_runs)
    "imported_by__username",
)
LIST_RELATIONS = ("server_host", "device", "pg_install", "queued_by", "imported_by")
# The client hosts' names, for a page of runs in one more query (Run.client_host_list reads them).
LIST_CLIENTS = Prefetch(
    "run_clients", queryset=RunClient.objects.select_related("host").only("run", "host", "position", "host__name")
)


class RunListForm(RunFiltersForm):
    """The run list's form: the filters (RunFilter's fields), its sort order and its paging."""

    sort = forms.ChoiceField(
        label="Sort by",
        choices=sort_choices(),
        required=False,
        error_messages={
            "invalid_choice": "must be one of "
            + ", ".join(value for value, _ in sort_choices() if value)
            + " (a leading - sorts the other way), or empty for the newest queued first"
        },
    )
    per_page = forms.TypedChoiceField(
        label="Runs per page",
        choices=[(str(n), str(n)) for n in PER_PAGE_CHOICES],
        coerce=int,
        required=False,
        error_messages={"invalid_choice": f"must be one of {', '.join(map(str, PER_PAGE_CHOICES))}"},
    )
    page = forms.IntegerField(
        label="Page",
        required=False,
        min_value=1,
        max_value=MAX_PAGE,
        error_messages={
            "invalid": f"must be a whole number from 1 to {MAX_PAGE}",
            "min_value": f"must be a whole number from 1 to {MAX_PAGE}",
            "max_value": f"must be a whole number from 1 to {MAX_PAGE}",
        },
    )
    past_the_end: str | None = None  # the notice when the page asked for is past the list's end

    def __init__(self, data: QueryDict | None = None, *args: Any, **kwargs: Any) -> None:
        # A bound form shows what was sent: without this, a missing per_page would show as 25.
        if data is not None and "per_page" not in data:
            data = data.copy()
            data["per_page"] = str(DEFAULT_PER_PAGE)
        super().__init__(data, *args, **kwargs)

    @property
    def filter_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in run_filter_names()]

    @property
    def sort_and_size_fields(self) -> list[forms.BoundField]:
        return [self["sort"], self["per_page"]]

    def is_filtered(self) -> bool:
        return any(self.cleaned_data.get(name) for name in run_filter_names())

    def filter_query(self) -> str:
        """The filters as a query string, for a comparison of the runs they list (runs.compare.query)."""
        given = {name: self.data[name] for name in run_filter_names() if self.data.get(name)}
        return urlencode(given)

    def device_elsewhere(self) -> Device | None:
        """The device filtered by when it is not the chosen host's: only runs on it whose pgbench
        ran on that host (as their client) match, which an empty list should say."""
        device, host = self.cleaned_data.get("device"), self.cleaned_data.get("host")
        return device if device and host and device.host_id != host.pk else None

    def lists_newest_first(self) -> bool:
        """Every run, newest queued first: the list a run queued elsewhere goes to the top of."""
        return not self.is_filtered() and not self.cleaned_data.get("sort")


class RunListFilter(RunFilter):
    """RunFilter on the run list page, whose form also sorts and pages."""

    also_allowed = PAGING

    class Meta(RunFilter.Meta):
        form = RunListForm

    @property
    def list_form(self) -> RunListForm:
        form = self.form
        assert isinstance(form, RunListForm)
        return form


def list_runs() -> QuerySet[Run]:
    """Every run, newest first, with only what a row of the list shows."""
    runs = Run.objects.select_related(*LIST_RELATIONS).prefetch_related(LIST_CLIENTS).only(*LIST_COLUMNS)
    runs = runs.annotate(note_start=Substr("note", 1, NOTE_SHOWN + 1))  # a note's beginning, never all of it
    return runs.order_by("-created_at", "-id")


def _listed_runs(chosen: RunListFilter) -> QuerySet[Run]:
    listed = sort_runs(chosen.filter_queryset(list_runs()), chosen.list_form.cleaned_data.get("sort") or "")
    return annotate_progress(listed)


def filtered_run_page(chosen: RunListFilter) -> "Page[Run] | None":
    """The page of runs the query asks for (past the end: the last, and the form's `past_the_end`
    says so); None if it cannot be answered, the form then says why."""
    if not chosen.is_valid():
        return None
    form = chosen.list_form
    paginator = Paginator(_listed_runs(chosen), form.cleaned_data["per_page"] or DEFAULT_PER_PAGE)
    page, form.past_the_end = page_or_last(paginator, form.cleaned_data["page"] or 1, "runs")
    return page
