"""The queue form: every field of a run, as the page shows it and the API (through its
serializer) reads it.

Its fields parse what was typed; whether that run may be queued is decided by
runs.specs.spec_errors, the one validation path the page, the API and campaigns share, so a
mistake shows beside its field instead of failing on the lab host minutes later."""

from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from runs.models import Device, Host, PgInstall, Run
from runs.specs import FORM_FIELDS, Inventory, RunSpec, spec_errors

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


class RunForm(forms.ModelForm):
    class Meta:
        model = Run
        fields = RUN_FIELDS
        field_classes = {"server_host": HostChoiceField, "client_host": HostChoiceField}
        widgets = {
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
        self.fields["pg_install"].queryset = PgInstall.objects.select_related("host")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for field, messages in spec_errors(RunSpec.from_form_data(data), Inventory.load()).items():
            if field != NON_FIELD_ERRORS and field in self.errors:
                continue  # its own parser has said what is wrong with it
            self.add_error(None if field == NON_FIELD_ERRORS else field, messages)
        return data


def _host_label(host: Host) -> str:
    return f"{host.name} (benchlab's own server: runs not allowed)" if host.own_server_refusal() else host.name


def run_form_initial(run: Run) -> dict[str, Any]:
    """A run's specification as the form's initial values, for "Run again"."""
    return {FORM_FIELDS[name]: value for name, value in RunSpec.from_run(run).as_json().items()}
