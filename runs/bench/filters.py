"""Which runs: the one filter definition that the run list page, the API (/api/runs/), the
comparisons (and so their exports) read. A filter that cannot be applied is refused, naming it
and what it takes (runs.common.filters).

`host` is a run's server host or one of its client hosts (a run whose pgbench ran there); every
other filter is the run's own field. Days are the server's time zone's.
"""

from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.validators import RegexValidator
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from runs.common.fields import DayField, InventoryChoiceField, RowSelect, choice_field, day_said
from runs.common.filters import FieldFilter, StrictFilterForm, StrictFilterSet
from runs.models import (
    Campaign,
    Device,
    Driver,
    Filesystem,
    Host,
    PgInstall,
    Run,
    RunClient,
    RunOrigin,
    RunState,
    Workload,
)
from runs.models.notes import TAG, TAG_ALLOWED, TAG_MAX

# What the free-text search looks in, besides the tags.
SEARCHED = (
    "note",
    "campaign__name",
    "campaign__note",
    "server_host__name",
    "device__name",
    "pg_install__label",
    "mount_options",
    "error",
)


class LowercaseField(forms.CharField):
    """Text read as lowercase: tags are stored so (runs.notes.rules)."""

    def to_python(self, value: Any) -> str:
        return str(super().to_python(value)).lower()


def _users_who_queued_runs() -> QuerySet[User]:
    queued = Exists(Run.objects.filter(queued_by=OuterRef("pk")))
    return User.objects.filter(queued).only("id", "username").order_by("username")


def _start_of(day: date) -> datetime:
    """Midnight of the day where the user reads the dates (the server's time zone)."""
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def _word_anywhere(word: str) -> Q:
    tagged = Q(tags__contains=[word.lower()]) | Q(campaign__tags__contains=[word.lower()])
    return tagged | Q(*(Q(**{f"{field}__icontains": word}) for field in SEARCHED), _connector=Q.OR)


class RunFiltersForm(StrictFilterForm):
    """The filters' form: select lists narrowed per request, and days in order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        users: Any = self.fields["queued_by"]
        users.queryset = _users_who_queued_runs()  # per request: who has queued runs changes
        users.label_from_instance = lambda user: user.get_username()
        campaigns: Any = self.fields["campaign"]
        campaigns.label_from_instance = lambda campaign: f"{campaign.name} (#{campaign.pk})"
        devices = self.fields["device"].widget
        if isinstance(devices, RowSelect):
            # Each device says its host: the page narrows the list to the chosen host's (static/js/run_list.js).
            devices.option_data = lambda device: {"data-host": str(device.host_id)}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        first, last = cleaned.get("date_from"), cleaned.get("date_to")
        if first and last and first > last:
            said = f"{day_said(last)} is before Queued from ({day_said(first)}): no day is in between"
            self.add_error("date_to", said)
        return cleaned


class RunFilter(StrictFilterSet):
    q = FieldFilter(
        forms.CharField(
            label="Search", required=False, max_length=200, widget=forms.TextInput(attrs={"type": "search"})
        ),
        method="search",
    )
    # The select lists load names only: hosts carry probe facts, campaigns their specifications.
    host = FieldFilter(
        InventoryChoiceField(Host.objects.only("id", "name").order_by("name"), "host", "Host (server or client)"),
        method="host_or_client",
    )
    device = FieldFilter(
        InventoryChoiceField(
            Device.objects.select_related("host").only("id", "name", "host__name").order_by("host__name", "name"),
            "device",
            "Device",
            widget=RowSelect,
        ),
        field_name="device",
    )
    filesystem = FieldFilter(choice_field("Filesystem", Filesystem.choices), field_name="filesystem")
    mount_options = FieldFilter(
        forms.CharField(label="Mount options contain", required=False, max_length=300),
        field_name="mount_options",
        lookup_expr="icontains",
    )
    pg_install = FieldFilter(
        InventoryChoiceField(
            PgInstall.objects.select_related("host")
            .only("id", "label", "version", "block_size", "host__name")
            .order_by("host__name", "version", "block_size"),
            "PostgreSQL install",
            "PostgreSQL",
            "any install",
        ),
        field_name="pg_install",
    )
    driver = FieldFilter(choice_field("Driver", Driver.choices), field_name="driver")
    workload = FieldFilter(choice_field("Workload", Workload.choices), field_name="workload")
    state = FieldFilter(choice_field("State", RunState.choices), field_name="state")
    origin = FieldFilter(choice_field("Origin", RunOrigin.choices), field_name="origin")  # measured or imported
    queued_by = FieldFilter(
        InventoryChoiceField(User.objects.none(), "user who queued runs", "Queued by", "anyone"), field_name="queued_by"
    )
    date_from = FieldFilter(DayField(label="Queued from", required=False), method="queued_from")
    date_to = FieldFilter(DayField(label="Queued until", required=False), method="queued_until")
    campaign = FieldFilter(
        InventoryChoiceField(Campaign.objects.only("id", "name").order_by("-created_at"), "campaign", "Campaign"),
        field_name="campaign",
    )

    tag = FieldFilter(
        LowercaseField(
            label="Tag",
            required=False,
            max_length=TAG_MAX,
            validators=[RegexValidator(rf"\A{TAG.pattern}\Z", f"a tag holds only {TAG_ALLOWED}")],
        ),
        method="tagged",
    )

    where = "the run list"

    class Meta(StrictFilterSet.Meta):
        model = Run
        fields: list[str] = []  # every filter is declared above
        form = RunFiltersForm

    # The methods' last parameter is `value`, typed: the API's schema (drf-spectacular) reads it.
    @extend_schema_field(OpenApiTypes.INT)
    def host_or_client(self, runs: QuerySet[Run], name: str, value: Host) -> QuerySet[Run]:
        # Its clients by a subquery, not a join: a join would list a run once per client host.
        return runs.filter(Q(server_host=value) | Q(pk__in=RunClient.objects.filter(host=value).values("run_id")))

    def search(self, runs: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        """Runs where each word is in a note, a tag, the campaign's name, the host's or device's
        name, the install's label, the mount options or the failure."""
        for word in value.split():
            runs = runs.filter(_word_anywhere(word))
        return runs

    def tagged(self, runs: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        return runs.filter(Q(tags__contains=[value]) | Q(campaign__tags__contains=[value]))

    def queued_from(self, runs: QuerySet[Run], name: str, value: date) -> QuerySet[Run]:
        return runs.filter(created_at__gte=_start_of(value))

    def queued_until(self, runs: QuerySet[Run], name: str, value: date) -> QuerySet[Run]:
        return runs.filter(created_at__lt=_start_of(value + timedelta(days=1))) if value < date.max else runs


def run_filter_names() -> tuple[str, ...]:
    """The parameters that choose runs, in the page's order."""
    return RunFilter.parameters()
