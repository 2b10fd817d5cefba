"""The import form (issue 35): pgbench's output files and the setup they were measured on.

The setup fields are the queue form's own (runs.forms.runs: same labels, widgets, choices);
the files are read and checked line by line in clean(), so a bad file is named with its line
beside its field and nothing is stored (runs.imports.services.run_import writes only a valid form)."""

from collections.abc import Sequence
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile

from runs.forms.runs import HostChoiceField, RowSelect, RunForm, device_option_data
from runs.imports.parse import MAX_FILE_BYTES, ImportFileError, UploadedText, decode_upload
from runs.imports.reading import ImportedOutput, read_pgbench_output
from runs.imports.services.run_import import REPORTED_SETUP, ImportedFile, import_setup_errors
from runs.models import Host, PgInstall, Run, Workload

IMPORT_SETUP_FIELDS = [
    "server_host", "device", "filesystem", "mkfs_options", "mount_options", "pg_install", "pg_settings",
    "workload", "query_mode", "scale", "clients", "threads", "rate_limit_tps", "log_sampling_rate",
]  # fmt: skip
# The built-in scripts and a custom one: what pgbench's report names; the library's and sysbench's are benchlab's.
IMPORT_WORKLOADS = [Workload.TPCB_LIKE, Workload.SIMPLE_UPDATE, Workload.SELECT_ONLY, Workload.CUSTOM]
FILE_FIELDS = {"summary": "report", "progress": "report", "transaction_logs": "transaction-log",
               "aggregate_logs": "aggregate-log"}  # fmt: skip
_MIB = MAX_FILE_BYTES // (1024 * 1024)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (pgbench writes one log per thread), as Django's docs show it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data if item]
        return [single(data, initial)] if data else []


class RunImportForm(forms.ModelForm):
    summary = forms.FileField(
        required=False,
        label="Summary (stdout)",
        help_text="pgbench's report: 'transaction type: …' down to 'tps = …'. It may hold the progress lines too "
        f"(2>&1). Text, at most {_MIB} MiB.",
    )
    progress = forms.FileField(
        required=False,
        label="Progress (stderr, -P)",
        help_text="The 'progress: 1.0 s, … tps, lat … ms …' lines: the run's per-second chart. "
        "At least one of summary and progress is needed.",
    )
    transaction_logs = MultipleFileField(
        required=False,
        label="Per-transaction logs (-l)",
        help_text="pgbench_log.<pid>[.<thread>], every thread's file: the latency percentiles.",
    )
    aggregate_logs = MultipleFileField(
        required=False,
        label="Aggregate logs (-l --aggregate-interval)",
        help_text="Every thread's file: merged into one series of intervals (mean, min, max latency).",
    )

    class Meta:
        model = Run
        fields = IMPORT_SETUP_FIELDS
        field_classes = {"server_host": HostChoiceField}
        labels = {**RunForm.Meta.labels, "server_host": "Server host"}
        widgets = {name: RunForm.Meta.widgets[name] for name in ("pg_settings", "mount_options", "mkfs_options")} | {
            "device": RowSelect,
            "pg_install": RowSelect,
        }
        help_texts = {
            "scale": "Empty: the report's 'scaling factor'. Given, it must agree with the report.",
            "clients": "Empty: the report's 'number of clients'.",
            "threads": "Empty: the report's 'number of threads'.",
            "log_sampling_rate": "The --sampling-rate the per-transaction logs were written with (1: every one).",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output: ImportedOutput | None = None
        self.files_read: list[ImportedFile] = []
        self.fields["server_host"].queryset = Host.objects.filter(serves_postgres=True)  # type: ignore[attr-defined]
        self.fields["device"].queryset = self.fields["device"].queryset.select_related("host")  # type: ignore[attr-defined]
        installs = PgInstall.objects.select_related("host")  # a removed build's old results may still be imported
        self.fields["pg_install"].queryset = installs  # type: ignore[attr-defined]
        self.fields["pg_install"].label_from_instance = lambda install: install.choice_label  # type: ignore[attr-defined]
        self.fields["device"].widget.option_data = device_option_data
        self.fields["pg_install"].widget.option_data = lambda i: {"data-host": str(i.host_id)}
        workloads = self.fields["workload"]
        workloads.choices = [(w.value, w.label) for w in IMPORT_WORKLOADS]  # type: ignore[attr-defined]
        for name in ("scale", "clients", "threads"):
            self.fields[name].required = False
            self.fields[name].initial = None  # the model's defaults would hide "from the report"
            self.initial.pop(name, None)

    def _uploads(self, name: str) -> Sequence[UploadedFile]:
        value = self.cleaned_data.get(name)
        if isinstance(value, list):
            return value
        return [value] if value else []

    def _read(self, name: str) -> list[UploadedText]:
        """The field's files as text; an unreadable one is the field's error."""
        texts = []
        for upload in self._uploads(name):
            try:
                texts.append(decode_upload(upload.name or name, upload.read()))
            except ImportFileError as exc:
                self.add_error(name, str(exc))
        return texts

    def _field_of(self, file_name: str) -> str | None:
        for name in FILE_FIELDS:
            if any(upload.name == file_name for upload in self._uploads(name)):
                return name
        return None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        texts = {name: self._read(name) for name in FILE_FIELDS}
        if any(name in self.errors for name in FILE_FIELDS):
            return data
        reports = texts["summary"] + texts["progress"]
        if not reports:
            self.add_error("summary", "Upload pgbench's summary (stdout) or its progress lines (stderr), or both.")
            return data
        try:
            self.output = read_pgbench_output(
                reports, texts["transaction_logs"], texts["aggregate_logs"], data.get("log_sampling_rate") or 1.0
            )
        except ImportFileError as exc:
            self.add_error(self._field_of(exc.file_name), str(exc))
            return data
        self.files_read = [ImportedFile(FILE_FIELDS[name], t.name, t.text) for name in FILE_FIELDS for t in texts[name]]
        self._check_setup(data, self.output)
        return data

    def _check_setup(self, data: dict[str, Any], output: ImportedOutput) -> None:
        """The described setup against the report; a blank scale, clients or threads takes the report's."""
        if any(name in self.errors for name in ("server_host", "device", "pg_install")):
            return  # the setup is not whole: its own errors say why
        setup = Run(**{name: data.get(name) for name in ("server_host", "device", "pg_install", *REPORTED_SETUP)})
        for field, message in import_setup_errors(setup, output).items():
            self.add_error(field, message)
        for name in REPORTED_SETUP:
            if name in data:
                data[name] = getattr(setup, name)
