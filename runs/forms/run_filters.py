"""The run list's filters, sort order and paging: a form that checks the query string, and the
page of runs it selects.

A filter that cannot be applied is refused with a message naming it, never dropped: a user who
asked for one device and got every device's runs would take them for the answer. The list query
loads only the columns the table shows; a run's JSON (summary, metrics, environment) and long
texts can be megabytes each, and 10,000 runs must list in well under 200 ms.
"""

from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.paginator import EmptyPage, Page, Paginator
from django.db.models import Exists, Model, OuterRef, Prefetch, Q, QuerySet
from django.http import QueryDict
from django.utils import timezone

from runs.bench.selectors.list_rows import annotate_progress
from runs.bench.selectors.list_sort import sort_choices, sort_runs
from runs.common.params import is_id
from runs.forms.runs import RowSelect
from runs.models import Campaign, Device, Driver, Filesystem, Host, PgInstall, Run, RunClient, RunState, Workload

PER_PAGE_CHOICES = (25, 50, 100, 200)
DEFAULT_PER_PAGE = 50
FILTERS = (
    "host",
    "device",
    "filesystem",
    "mount_options",
    "pg_install",
    "driver",
    "workload",
    "state",
    "queued_by",
    "date_from",
    "date_to",
    "campaign",
)
PAGING = ("sort", "per_page", "page")

# What the table shows, and nothing else (no JSON, no failure output, no script, no settings).
LIST_COLUMNS = (
    "id",
    "state",
    "filesystem",
    "mount_options",
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
)
LIST_RELATIONS = ("server_host", "device", "pg_install", "queued_by")
# The client hosts' names, for a page of runs in one more query (Run.client_host_list reads them).
LIST_CLIENTS = Prefetch(
    "run_clients", queryset=RunClient.objects.select_related("host").only("run", "host", "position", "host__name")
)


class InventoryChoiceField(forms.ModelChoiceField):
    """A row picked by id from a select list. Anything that is not an id is refused before it
    reaches a query (int() takes "١٢", PostgreSQL refuses numbers past bigint)."""

    def __init__(
        self, queryset: QuerySet[Any], what: str, label: str, empty_label: str = "", widget: Any = None
    ) -> None:
        super().__init__(
            queryset,
            required=False,
            label=label,
            empty_label=empty_label or f"any {what}",
            error_messages={"invalid_choice": f"no {what} has id %(value)s; pick one from the list"},
            widget=widget,
        )
        self.what = what

    def to_python(self, value: Any) -> Model | None:
        if value in self.empty_values:
            return None
        if not is_id(str(value)):
            raise ValidationError(
                f"must be the id of a {self.what}, a whole number; pick one from the list", code="invalid_choice"
            )
        return super().to_python(value)


def _choice_field(label: str, choices: list[tuple[str, str]]) -> forms.ChoiceField:
    allowed = ", ".join(value for value, _ in choices)
    return forms.ChoiceField(
        label=label,
        required=False,
        choices=[("", "any"), *choices],
        error_messages={"invalid_choice": f"must be one of {allowed}"},
    )


class DayField(forms.DateField):
    """A day as YYYY-MM-DD (what a date input sends). A refusal repeats what was sent: the
    browser's date input cannot show a day that does not exist, such as 2025-02-30."""

    input_formats = ["%Y-%m-%d"]
    widget = forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"})

    def to_python(self, value: Any) -> date | None:
        try:
            return super().to_python(value)
        except ValidationError:
            shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:20]}..."
            raise ValidationError(
                f"must be a day written YYYY-MM-DD, e.g. 2025-03-31, not {shown!r}", code="invalid"
            ) from None


def _day(day: date) -> str:
    """A day as nobody can misread it, whichever order the browser's date input shows (11/20/2026
    in one locale, 20/11/2026 in another): "20 Nov 2026"."""
    return f"{day.day} {day:%b %Y}"


def _users_who_queued_runs() -> QuerySet[User]:
    queued = Exists(Run.objects.filter(queued_by=OuterRef("pk")))
    return User.objects.filter(queued).only("id", "username").order_by("username")


class RunFilterForm(forms.Form):
    # The select lists load names only: hosts carry probe facts, campaigns their specifications.
    host = InventoryChoiceField(Host.objects.only("id", "name").order_by("name"), "host", "Host (server or client)")
    device = InventoryChoiceField(
        Device.objects.select_related("host").only("id", "name", "host__name").order_by("host__name", "name"),
        "device",
        "Device",
        # Each device says its host: the page narrows the list to the chosen host's (static/js/run_list.js).
        widget=RowSelect,
    )
    filesystem = _choice_field("Filesystem", Filesystem.choices)
    mount_options = forms.CharField(label="Mount options contain", required=False, max_length=300)
    pg_install = InventoryChoiceField(
        PgInstall.objects.select_related("host")
        .only("id", "label", "version", "block_size", "host__name")
        .order_by("host__name", "version", "block_size"),
        "PostgreSQL install",
        "PostgreSQL",
        "any install",
    )
    driver = _choice_field("Driver", Driver.choices)
    workload = _choice_field("Workload", Workload.choices)
    state = _choice_field("State", RunState.choices)
    queued_by = InventoryChoiceField(User.objects.none(), "user who queued runs", "Queued by", "anyone")
    date_from = DayField(label="Queued from", required=False)
    date_to = DayField(label="Queued until", required=False)
    campaign = InventoryChoiceField(Campaign.objects.only("id", "name").order_by("-created_at"), "campaign", "Campaign")
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
        error_messages={"invalid": "must be a whole number from 1", "min_value": "must be a whole number from 1"},
    )

    def __init__(self, query: QueryDict) -> None:
        # A bound form shows what was sent: without this, a missing per_page would show as 25.
        if "per_page" not in query:
            query = query.copy()
            query["per_page"] = str(DEFAULT_PER_PAGE)
        super().__init__(query)
        self.query = query
        users: Any = self.fields["queued_by"]
        users.queryset = _users_who_queued_runs()  # per request: who has queued runs changes
        users.label_from_instance = lambda user: user.get_username()
        campaigns: Any = self.fields["campaign"]
        campaigns.label_from_instance = lambda campaign: f"{campaign.name} (#{campaign.pk})"
        devices = self.fields["device"].widget
        assert isinstance(devices, RowSelect)
        devices.option_data = lambda device: {"data-host": str(device.host_id)}

    @property
    def filter_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in FILTERS]

    @property
    def sort_and_size_fields(self) -> list[forms.BoundField]:
        return [self["sort"], self["per_page"]]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._refuse_unknown_and_repeated_parameters()
        first, last = cleaned.get("date_from"), cleaned.get("date_to")
        if first and last and first > last:
            self.add_error("date_to", f"{_day(last)} is before Queued from ({_day(first)}): no day is in between")
        return cleaned

    def _refuse_unknown_and_repeated_parameters(self) -> None:
        unknown = sorted(set(self.query) - set(self.fields))
        if unknown:
            shown = ", ".join(repr(name[:40]) for name in unknown[:5])
            raise ValidationError(f"Unknown parameter {shown}: the run list takes {', '.join(FILTERS + PAGING)}.")
        for name in self.fields:
            if len(self.query.getlist(name)) > 1:
                self.add_error(name, "is given more than once; give it once")

    def is_filtered(self) -> bool:
        return any(self.cleaned_data.get(name) for name in FILTERS)

    def device_elsewhere(self) -> Device | None:
        """The device filtered by when it is not the chosen host's: only runs on it whose pgbench
        ran on that host (as their client) match, which an empty list should say."""
        device, host = self.cleaned_data.get("device"), self.cleaned_data.get("host")
        return device if device and host and device.host_id != host.pk else None

    def lists_newest_first(self) -> bool:
        """Every run, newest queued first: the list a run queued elsewhere goes to the top of."""
        return not self.is_filtered() and not self.cleaned_data.get("sort")


def filter_runs(runs: QuerySet[Run], filters: dict[str, Any]) -> QuerySet[Run]:
    """The runs that match every filter that is set (a form's cleaned data)."""
    if host := filters.get("host"):
        # Its clients by a subquery, not a join: a join would list a run once per client host.
        runs = runs.filter(Q(server_host=host) | Q(pk__in=RunClient.objects.filter(host=host).values("run_id")))
    for name in ("device", "filesystem", "pg_install", "driver", "workload", "state", "queued_by", "campaign"):
        if value := filters.get(name):
            runs = runs.filter(**{name: value})
    if mount_options := filters.get("mount_options"):
        runs = runs.filter(mount_options__icontains=mount_options)
    if first := filters.get("date_from"):
        runs = runs.filter(created_at__gte=_start_of(first))
    if (last := filters.get("date_to")) and last < date.max:
        runs = runs.filter(created_at__lt=_start_of(last + timedelta(days=1)))
    return runs


def _start_of(day: date) -> datetime:
    """Midnight of the day where the user reads the dates (the server's time zone)."""
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def list_runs() -> QuerySet[Run]:
    """Every run, newest first, with only what a row of the list shows."""
    runs = Run.objects.select_related(*LIST_RELATIONS).prefetch_related(LIST_CLIENTS).only(*LIST_COLUMNS)
    return runs.order_by("-created_at", "-id")


def _listed_runs(filters: dict[str, Any]) -> QuerySet[Run]:
    runs = sort_runs(filter_runs(list_runs(), filters), filters.get("sort") or "")
    return annotate_progress(runs)


def filtered_run_page(form: RunFilterForm) -> "Page[Run] | None":
    """The page of runs the form asks for; None if it cannot be answered, the form then says why."""
    if not form.is_valid():
        return None
    paginator = Paginator(_listed_runs(form.cleaned_data), form.cleaned_data["per_page"] or DEFAULT_PER_PAGE)
    number = form.cleaned_data["page"] or 1
    try:
        return paginator.page(number)
    except EmptyPage:
        form.add_error("page", _past_the_end(number, paginator))
        return None


def _past_the_end(number: int, paginator: "Paginator[Run]") -> str:
    if paginator.count == 0:
        return f"there is no page {number}: no run matches these filters (only page 1, empty)"
    return f"there is no page {number}: these runs fill pages 1 to {paginator.num_pages}"
