"""The queue form: every field of a run, as the page shows it and the API (through its
serializer) reads it.

Its fields parse what was typed; whether that run may be queued is decided by
runs.bench.spec_checks.spec_errors, the one validation path the page, the API and campaigns share, so a
mistake shows beside its field instead of failing on the lab host minutes later."""

import json
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import Q

from runs.bench.driver_checks import driver_fields
from runs.bench.spec_checks import Inventory, spec_errors
from runs.bench.specs import FIELD_LABELS, FORM_FIELDS, NUMBER_FIELDS, RunSpec, field_limits
from runs.common.fields import RowSelect
from runs.common.units import binary_size
from runs.forms.workload_library import LibraryChoice, ParamsField, library_choices, params_from_page
from runs.lab.pgbench.scale_room import BYTES_PER_SCALE, MIB
from runs.models import MAX_CLIENT_HOSTS, Device, Host, PgInstall, Run, Workload, WorkloadScript
from runs.models.run_clients import client_pgbench_install

# The page's order of the spec's fields (runs/bench/specs.py has them all, by their own names).
RUN_FIELDS = [
    "server_host",
    "device",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "pg_install",
    "pg_settings",
    "driver",
    "workload",
    "custom_script",
    "sysbench_tables",
    "sysbench_table_size",
    "library_script",
    "workload_params",
    "scale",
    "clients",
    "threads",
    "duration_s",
    "warmup_s",
    "warmup_run_s",
    "warmup_run_clients",
    "query_mode",
    "rate_limit_tps",
    "log_sampling_rate",
    "latency_limit_ms",
    "partitions",
    "partition_method",
    "fillfactor",
    "unlogged_tables",
    "foreign_keys",
    "init_steps",
    "client_hosts",
    "shared_database",
    "random_seed",
    "cache_state",
    "data_state",
    "checkpoint_before",
    "settle_s",
]
CLIENT_HOSTS = "client_hosts"  # not a column of Run but its RunClient rows: a form field of its own


class HostChoiceField(forms.ModelChoiceField):
    """Offers the hosts that take runs in its role, but reads any host's id: one that takes none
    (disabled, or not in this role) is then refused by spec_errors saying why, rather than as
    "not one of the available choices"."""

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except ValidationError as exc:
            if exc.code != "invalid_choice":
                raise
            try:
                host = Host.objects.filter(pk=value).first()
            except (ValueError, TypeError):
                host = None
            if host is None:
                raise
            return host


class ClientHostsField(forms.MultipleChoiceField):
    """Host ids in the order given (the page sends the ticked boxes in the list's order, the API its
    list's), repeats kept: any host's id is read, and spec_errors says what is wrong with one
    (unknown, named twice, the server, not a client host) beside the field."""

    default_error_messages = {"invalid_id": "%(value)s is not a host id: give host ids (whole numbers)."}

    def validate(self, value: Any) -> None:
        """Each value a whole number; not "one of the choices", which would hide spec_errors' why."""
        if self.required and not value:
            raise ValidationError(self.error_messages["required"], code="required")
        for text in value:
            if _host_id(text) is None:
                raise ValidationError(self.error_messages["invalid_id"], "invalid_id", {"value": repr(text[:40])})

    def clean(self, value: Any) -> list[int]:
        return [int(text) for text in super().clean(value)]


def _host_id(value: object) -> int | None:
    """A host id as typed ("12"), or None: ASCII digits only ("²" is a digit to Python, not to int())."""
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


class ClientCheckboxes(forms.CheckboxSelectMultiple):
    """The client hosts as checkboxes, each carrying the pgbench it would run (data-pgbench)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.option_data: Callable[[str], dict[str, str]] = lambda value: {}

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        option["attrs"].update(self.option_data(str(option["value"])))
        return option


class RunForm(forms.ModelForm):
    """The run's fields; its client hosts are cleaned_data["client_hosts"], a list of host ids in
    their order, for bench.services.runs.run_enqueue (form.save() writes the run alone)."""

    field_order = RUN_FIELDS  # the client hosts, not a model field, in their place (the campaign page lists them)
    client_hosts = ClientHostsField(
        required=False,
        widget=ClientCheckboxes,
        label="Client hosts",
        help_text=(
            f"Hosts to run pgbench on, over TCP, all at once (at most {MAX_CLIENT_HOSTS}); none: pgbench runs on "
            "the server itself. "
            "The ticked ones are numbered top to bottom, whatever order they were ticked in (the API keeps "
            "its list's order), and each runs against its own database (bench_1, bench_2, …) unless they share one."
        ),
    )

    class Meta:
        model = Run
        fields = [name for name in RUN_FIELDS if name != CLIENT_HOSTS]
        field_classes = {"server_host": HostChoiceField, "workload_params": ParamsField}
        labels = {
            "pg_install": "PostgreSQL install",
            "mkfs_options": "mkfs options",
            "shared_database": "One database for all client hosts",
        }
        help_texts = {
            "shared_database": "With two client hosts or more: all of them run against one database (bench) "
            "instead of each against its own.",
        }
        widgets = {
            "device": RowSelect,
            "pg_install": RowSelect,
            "pg_settings": forms.Textarea(
                attrs={"rows": 4, "placeholder": "shared_buffers = 256MB\nmax_wal_size = 4GB"}
            ),
            "custom_script": forms.Textarea(attrs={"rows": 4}),
            "workload_params": forms.HiddenInput,
            "mount_options": forms.TextInput(attrs={"placeholder": "noatime,data=writeback,barrier=0"}),
            "mkfs_options": forms.TextInput(attrs={"placeholder": "-b 4096"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Hosts that take no runs stay listed, marked, so choosing one says why (spec_errors).
        enabled = Host.objects.filter(enabled=True)
        servers = self.fields["server_host"]
        servers.queryset = enabled.filter(serves_postgres=True)  # type: ignore[attr-defined]
        servers.label_from_instance = _host_label  # type: ignore[attr-defined]
        # Evaluated when the page renders its boxes (never for the API, which renders none).
        # A host named already (run again, a refused form) stays ticked even if it takes no runs as a
        # client now, marked, rather than silently dropped: queueing then says why (spec_errors).
        offered = Q(enabled=True, runs_clients=True) | Q(pk__in=self._named_client_hosts())
        self.client_choices = Host.objects.filter(offered).order_by("name").prefetch_related("pg_installs")
        self.fields[CLIENT_HOSTS].choices = lambda: [  # type: ignore[attr-defined]
            (host.pk, _client_label(host)) for host in self.client_choices
        ]
        self.fields["library_script"].label_from_instance = lambda s: f"{s} · {s.title}"  # type: ignore[attr-defined]
        self.fields["device"].queryset = Device.objects.select_related("host")  # type: ignore[attr-defined]
        live_installs = PgInstall.objects.filter(removed_at__isnull=True)  # a removed build's install runs nothing new
        self.fields["pg_install"].queryset = live_installs.select_related("host")  # type: ignore[attr-defined]
        self.fields["pg_install"].label_from_instance = lambda install: install.choice_label  # type: ignore[attr-defined]
        # Which pgbench each client host runs is a note static/js/run_form.js keeps beside its box.
        self._describe_rows()
        for name in NUMBER_FIELDS:
            _limit(self.fields[name], *field_limits(name))
        for name in ("cache_state", "data_state"):  # Django's own message does not say what is allowed
            choices = self.fields[name]
            allowed = ", ".join(str(value) for value, _ in choices.choices if value)  # type: ignore[attr-defined]
            choices.error_messages["invalid_choice"] = f"{FIELD_LABELS[name]} must be one of {allowed}; got %(value)s."
        self.fields["scale"].help_text = (
            f"pgbench -i needs about {BYTES_PER_SCALE // MIB} MiB per unit of scale, and as much again in WAL "
            "while loading (up to max_wal_size); the run's storage must hold both."
        )

    def driver_fields(self) -> dict[str, object]:
        """Which fields each driver uses, for the page's script (runs.bench.driver_checks)."""
        return driver_fields()

    def _named_client_hosts(self) -> set[int]:
        name = self.add_prefix(CLIENT_HOSTS)
        sent = self.data.getlist(name) if hasattr(self.data, "getlist") else self.data.get(name) or []
        named = [*(sent if isinstance(sent, list | tuple) else []), *(self.initial.get(CLIENT_HOSTS) or [])]
        return {pk for value in named if (pk := _host_id(value)) is not None}

    def _describe_rows(self) -> None:
        """What each option says about its row: devices and installs their host (the page narrows
        the lists to the server's), devices their size and use, clients the pgbench they would run."""
        # Evaluated once, on the first client option rendered (never for the API, which renders none).
        installs = PgInstall.objects.select_related("host").filter(host__serves_postgres=True, removed_at__isnull=True)
        described: dict[str, Callable[[Any], dict[str, str]]] = {
            "device": device_option_data,
            "pg_install": lambda install: {"data-host": str(install.host_id)},
        }
        for name, option_data in described.items():
            widget = self.fields[name].widget
            assert isinstance(widget, RowSelect)
            widget.option_data = option_data
        checkboxes = self.fields[CLIENT_HOSTS].widget
        assert isinstance(checkboxes, ClientCheckboxes)
        checkboxes.option_data = lambda value: next(
            (_client_data(host, installs) for host in self.client_choices if str(host.pk) == value), {}
        )

    def library_choices(self) -> list[LibraryChoice]:
        """Each library script's description and parameter inputs, for the page."""
        params = self.initial.get("workload_params") or {}
        chosen = self.data.get(self.add_prefix("library_script")) or self.initial.get("library_script")
        return library_choices(self.data, chosen, params if isinstance(params, dict) else {}, self.add_prefix(""))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        script = data.get("library_script")
        if data.get("workload") != Workload.LIBRARY and "workload" in data:
            # The page always sends its select's script: it means nothing without the library workload.
            data["library_script"], data["workload_params"] = None, {}
        elif (
            isinstance(script, WorkloadScript)
            and (sent := params_from_page(self.data, script, self.add_prefix(""))) is not None
        ):
            data["workload_params"] = sent
        if not isinstance(data.get("workload_params") or {}, dict):
            self.add_error("workload_params", 'Give the parameters as an object of values, {"skew": 1.5}.')
        if "workload_params" in data:
            params = data["workload_params"]
            data["workload_params"] = params if isinstance(params, dict) else {}
        spec = RunSpec.from_form_data(data)
        if "threads" in data:
            data["threads"] = spec.threads  # a sysbench run's are its clients (runs.bench.driver_checks)
        for field, messages in spec_errors(spec, Inventory.load()).items():
            if field != NON_FIELD_ERRORS and field in self.errors:
                continue  # its own parser has said what is wrong with it
            self.add_error(None if field == NON_FIELD_ERRORS else field, messages)
        return data


def _limit(field: forms.Field, low: float | None, high: float | None) -> None:
    """Give a number field the model's range as the browser's min and max, and leave the check
    to spec_errors, whose message names the range (the form's own would say "Ensure ...")."""
    field.validators = [v for v in field.validators if not isinstance(v, MinValueValidator | MaxValueValidator)]
    for attribute, limit in (("min", low), ("max", high)):
        field.widget.attrs.pop(attribute, None)
        if limit is not None:
            field.widget.attrs[attribute] = limit


def device_option_data(device: Device) -> dict[str, str]:
    size = binary_size(device.capacity_bytes) if device.capacity_bytes else "size not recorded"
    if not device.is_block_device:
        use = "a directory: filesystem directory or tmpfs"
    elif device.wipe_allowed:
        use = "block device, may be formatted"
    else:
        use = "block device, not wipeable: tmpfs only"
    return {"data-host": str(device.host_id), "data-facts": f"{device.get_kind_display()} · {size} · {use}"}


def _client_data(client: Host, server_installs: Iterable[PgInstall]) -> dict[str, str]:
    """The client's pgbench for each server install (lab_specs.client_pgbench_install's choice)."""
    pgbench = {}
    for install in server_installs:
        chosen = client_pgbench_install(install, client)
        pgbench[str(install.pk)] = f"pgbench of {chosen}" if chosen else ""
    return {"data-pgbench": json.dumps(pgbench)}


def _host_label(host: Host) -> str:
    return f"{host.name} (benchlab's own server: runs not allowed)" if host.own_server_refusal() else host.name


def _client_label(host: Host) -> str:
    if not host.enabled:
        return f"{host.name} (disabled)"
    if not host.runs_clients:
        return f"{host.name} (runs no pgbench clients)"
    return _host_label(host)


def run_form_initial(run: Run) -> dict[str, Any]:
    """A run's specification as the form's initial values, for "Run again" (its client hosts
    ticked; the page numbers them in its list's order)."""
    return {FORM_FIELDS[name]: value for name, value in RunSpec.from_run(run).as_json().items()}
