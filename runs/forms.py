"""The queue form: every field of a run, as the page shows it and the API (through its
serializer) reads it.

Its fields parse what was typed; whether that run may be queued is decided by
runs.specs.spec_errors, the one validation path the page, the API and campaigns share, so a
mistake shows beside its field instead of failing on the lab host minutes later."""

import json
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator

from runs.lab.scale_room import BYTES_PER_SCALE, MIB
from runs.models import Device, Host, PgInstall, Run
from runs.services.lab_specs import client_pgbench_install
from runs.specs import FORM_FIELDS, NUMBER_FIELDS, Inventory, RunSpec, field_limits, spec_errors
from runs.templatetags.units import binary_size

# The page's order of the spec's fields (runs/specs.py has them all, by their own names).
RUN_FIELDS = [
    "server_host",
    "device",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "pg_install",
    "pg_settings",
    "workload",
    "custom_script",
    "scale",
    "clients",
    "threads",
    "duration_s",
    "warmup_s",
    "query_mode",
    "rate_limit_tps",
    "log_sampling_rate",
    "client_host",
]


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


class RowSelect(forms.Select):
    """A select of inventory rows whose options carry data-* attributes about their row (whose
    host it is, its size, ...), so the page can narrow and explain the lists (static/js/run_form.js)
    without asking the server again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.option_data: Callable[[Any], dict[str, str]] = lambda row: {}

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        row = getattr(option["value"], "instance", None)  # a ModelChoiceIteratorValue; "" for the blank
        if row is not None:
            option["attrs"].update(self.option_data(row))
        return option


class RunForm(forms.ModelForm):
    class Meta:
        model = Run
        fields = RUN_FIELDS
        field_classes = {"server_host": HostChoiceField, "client_host": HostChoiceField}
        labels = {"pg_install": "PostgreSQL install", "mkfs_options": "mkfs options"}
        widgets = {
            "device": RowSelect,
            "pg_install": RowSelect,
            "client_host": RowSelect,
            "pg_settings": forms.Textarea(
                attrs={"rows": 4, "placeholder": "shared_buffers = 256MB\nmax_wal_size = 4GB"}
            ),
            "custom_script": forms.Textarea(attrs={"rows": 4}),
            "mount_options": forms.TextInput(attrs={"placeholder": "noatime,data=writeback,barrier=0"}),
            "mkfs_options": forms.TextInput(attrs={"placeholder": "-b 4096"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Hosts that take no runs stay listed, marked, so choosing one says why (spec_errors).
        enabled = Host.objects.filter(enabled=True)
        for name, role in (("server_host", "serves_postgres"), ("client_host", "runs_clients")):
            field = self.fields[name]
            field.queryset = enabled.filter(**{role: True})  # type: ignore[attr-defined]
            field.label_from_instance = _host_label  # type: ignore[attr-defined]
        self.fields["device"].queryset = Device.objects.select_related("host")  # type: ignore[attr-defined]
        live_installs = PgInstall.objects.filter(removed_at__isnull=True)  # a removed build's install runs nothing new
        self.fields["pg_install"].queryset = live_installs.select_related("host")  # type: ignore[attr-defined]
        clients = self.fields["client_host"]
        clients.queryset = clients.queryset.prefetch_related("pg_installs")  # type: ignore[attr-defined]
        # The help says what the field is for; where pgbench then runs (the server itself, or which
        # pgbench the client runs) is the one note static/js/run_form.js keeps under it, and the
        # blank choice says it without the script. The model's help said the same as that note.
        clients.help_text = "Another host to run pgbench on, over TCP."
        clients.empty_label = "none: on the server itself"  # type: ignore[attr-defined]
        self._describe_rows()
        for name in NUMBER_FIELDS:
            _limit(self.fields[name], *field_limits(name))
        self.fields["scale"].help_text = (
            f"pgbench -i needs about {BYTES_PER_SCALE // MIB} MiB per unit of scale, and as much again in WAL "
            "while loading (up to max_wal_size); the run's storage must hold both."
        )

    def _describe_rows(self) -> None:
        """What each option says about its row: devices and installs their host (the page narrows
        the lists to the server's), devices their size and use, clients the pgbench they would run."""
        # Evaluated once, on the first client option rendered (never for the API, which renders none).
        installs = PgInstall.objects.select_related("host").filter(host__serves_postgres=True, removed_at__isnull=True)
        described: dict[str, Callable[[Any], dict[str, str]]] = {
            "device": _device_data,
            "pg_install": lambda install: {"data-host": str(install.host_id)},
            "client_host": lambda client: _client_data(client, installs),
        }
        for name, option_data in described.items():
            widget = self.fields[name].widget
            assert isinstance(widget, RowSelect)
            widget.option_data = option_data

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for field, messages in spec_errors(RunSpec.from_form_data(data), Inventory.load()).items():
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


def _device_data(device: Device) -> dict[str, str]:
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


def run_form_initial(run: Run) -> dict[str, Any]:
    """A run's specification as the form's initial values, for "Run again"."""
    return {FORM_FIELDS[name]: value for name, value in RunSpec.from_run(run).as_json().items()}
