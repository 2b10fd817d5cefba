import dataclasses
from typing import Any

from django.db import models
from rest_framework import serializers

from runs.api.json_fields import JSONObjectField
from runs.bench.selectors.run_page import run_os_series
from runs.bench.specs import FIELD_LABELS, MODEL_FIELDS, NUMBER_FIELDS
from runs.forms.runs import CLIENT_HOSTS, RUN_FIELDS, RunForm
from runs.method.selectors import run_method
from runs.method.services.acceptance import MAX_REASON
from runs.models import Device, Host, PgInstall, Run, RunSample, Workload, WorkloadScript


class HostSerializer(serializers.ModelSerializer):
    class Meta:
        model = Host
        fields = ["id", "name", "address", "transport", "serves_postgres", "runs_clients", "enabled", "hostname",
                  "cpu_model", "cpu_cores", "memory_bytes", "kernel", "distribution", "probed_at"]  # fmt: skip


class DeviceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Device
        fields = ["id", "host", "name", "kind", "path", "model", "serial", "capacity_bytes", "wipe_allowed"]


class PgInstallSerializer(serializers.ModelSerializer):
    class Meta:
        model = PgInstall
        fields = [
            "id",
            "host",
            "bin_dir",
            "version",
            "block_size",
            "wal_block_size",
            "label",
            "removed_at",
            "missing_since",
        ]


class ClientHostIdsField(serializers.ListField):
    """The run's client hosts: host ids in their order (client 1 first), read from its RunClient rows."""

    def get_attribute(self, instance: Run) -> list[int]:
        return [run_client.host_id for run_client in instance.run_clients.all()]


def _choice_refusal(name: str) -> str:
    """What the page says of a value its choices do not have ({input}: DRF's word for the value)."""
    allowed = ", ".join(str(value) for value, _ in MODEL_FIELDS[name].choices or ())
    return f"{FIELD_LABELS[name]} must be one of {allowed}; got {{input}}."


_WRITE_ONLY = ("library_script_version", "client_host", "method_reason")  # written, and no column of Run


class LibraryScriptField(serializers.CharField):
    """A library script by name (its version: library_script_version, the newest if left out)."""

    def to_representation(self, value: WorkloadScript) -> str:
        return value.name


class LibraryVersionField(serializers.IntegerField):
    def get_attribute(self, instance: Run) -> int | None:
        return instance.library_script.version if instance.library_script else None


class RunSerializer(serializers.ModelSerializer):
    """Runs are validated by the queue form itself, so the API and the page refuse the same things."""

    # Every JSON column of a run holds an object (the parameters, pgbench's summary, the environment…).
    serializer_field_mapping = serializers.ModelSerializer.serializer_field_mapping | {
        models.JSONField: JSONObjectField
    }

    client_hosts = ClientHostIdsField(
        child=serializers.IntegerField(),
        required=False,
        max_length=100,  # far more than a run may have: the form then says how many it may
        help_text="Host ids to run pgbench on, over TCP, all at once, in their order (client 1 first); "
        "none or [] (the default): pgbench runs on the server itself.",
    )
    client_host = serializers.IntegerField(
        required=False,
        allow_null=True,
        write_only=True,
        help_text="Deprecated: one client host's id (null: none), as scripts gave it before runs could have "
        "several; the same as client_hosts: [id]. Give client_hosts instead; not both.",
    )
    client_host_names = serializers.SerializerMethodField(help_text="The client hosts' names, in their order.")
    configuration_key = serializers.CharField(
        source="series_key",
        read_only=True,
        help_text="The run's configuration as a key: runs with equal keys differ in nothing but the random seed "
        "(the regression watch's series, /series/<key>/).",
    )

    library_script = LibraryScriptField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text='With workload "library": the library script\'s name, e.g. "skewed-zipfian".',
    )
    library_script_version = LibraryVersionField(
        required=False, allow_null=True, help_text="Its version; left out or null: the newest."
    )

    # Accepts the method warnings the run's specification gets (runs.method), with this reason, kept on the run.
    method_reason = serializers.CharField(write_only=True, required=False, allow_blank=True, max_length=MAX_REASON)

    class Meta:
        model = Run
        fields = ["id", *RUN_FIELDS, "library_script_version", "client_host", "client_host_names", "method_reason",
                  "state", "queued_by", "origin", "imported_by", "campaign", "repetition", "configuration_key",
                  "note", "tags",
                  "created_at", "started_at", "finished_at",
                  "cancel_requested", "failed_step", "failed_command", "failed_exit_status", "failed_output", "error",
                  "tps", "latency_avg_ms", "latency_stddev_ms", "steady_tps_mean", "steady_tps_stddev",
                  "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "failed_transactions",
                  "skipped_transactions", "device_util_pct", "cache_hit_pct", "memory_tier", "durable"]  # fmt: skip
        read_only_fields = [name for name in fields if name not in (*RUN_FIELDS, *_WRITE_ONLY)]
        # An id is a whole number: without this, 2.5 would be read as host 2.
        extra_kwargs = (
            {name: {"pk_field": serializers.IntegerField()} for name in ("server_host", "device", "pg_install")}
            | {name: {"min_value": None, "max_value": None} for name in NUMBER_FIELDS}
            | {  # the form names the range
                name: {"error_messages": {"invalid_choice": _choice_refusal(name)}}
                for name in ("cache_state", "data_state")
            }
        )

    def get_client_host_names(self, run: Run) -> list[str]:
        return [host.name for host in run.client_host_list]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "client_host" in attrs:  # the deprecated single client host
            if attrs.get(CLIENT_HOSTS):
                raise serializers.ValidationError({"client_host": "Give client_hosts (a list of ids), not both."})
            one = attrs.pop("client_host")
            attrs[CLIENT_HOSTS] = [] if one is None else [one]
        attrs["library_script"] = library_script_id(attrs)
        # A field left out takes the model's default, as the page's form shows it; null is null.
        data = {name: _form_value(attrs[name] if name in attrs else _model_default(name)) for name in RUN_FIELDS}
        form = RunForm(data)
        if not form.is_valid():
            raise serializers.ValidationError(
                {field: [str(e) for e in errors] for field, errors in form.errors.items()}
            )
        return {name: form.cleaned_data[name] for name in RUN_FIELDS} | {
            "method_reason": attrs.get("method_reason", "")
        }


def library_script_id(attrs: dict[str, Any]) -> int | None:
    """The id of the library script named (and versioned) in the API's input; a 400 naming what
    the library has when there is none such, or when a script is named without the library workload."""
    name, version = attrs.pop("library_script", None), attrs.pop("library_script_version", None)
    if attrs.get("workload") != Workload.LIBRARY:
        if name or version or attrs.get("workload_params"):
            raise serializers.ValidationError(
                {"workload": 'library_script and workload_params go with "workload": "library".'}
            )
        return None
    if not name:
        return None  # the form says a library workload needs its script, naming them
    versions = {script.version: script.pk for script in WorkloadScript.objects.filter(name=name)}
    if not versions:
        names = ", ".join(sorted(set(WorkloadScript.objects.values_list("name", flat=True)))) or "none yet"
        raise serializers.ValidationError(
            {"library_script": f"No library script {name!r:.60}: the library has {names}."}
        )
    if version is None:
        return versions[max(versions)]
    if version not in versions:
        have = ", ".join(str(v) for v in sorted(versions))
        raise serializers.ValidationError({"library_script_version": f"{name} has versions {have}, not {version}."})
    return versions[version]


def _model_default(name: str) -> Any:
    if name == CLIENT_HOSTS:
        return []
    field = Run._meta.get_field(name)
    return field.get_default() if isinstance(field, models.Field) else None


def _form_value(value: Any) -> Any:
    if value is None:
        return ""
    return value.pk if hasattr(value, "pk") else value


class RunDetailSerializer(RunSerializer):
    # The iostat and vmstat samples: source -> column -> a value a second (one query).
    os_series = serializers.SerializerMethodField()
    method = serializers.SerializerMethodField()
    campaign_name = serializers.CharField(source="campaign.name", read_only=True, default=None)
    configuration = serializers.SerializerMethodField(
        help_text="A campaign's run: its configuration's place in the campaign (from 0) and what it varies."
    )

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "campaign_name", "configuration", "summary", "environment", "metrics",
                  "os_means", "os_series", "method"]  # fmt: skip
        read_only_fields = [name for name in fields if name not in (*RUN_FIELDS, "client_host")]

    def get_configuration(self, run: Run) -> dict[str, Any] | None:
        configuration = run.configuration
        if configuration is None:
            return None
        return {"index": configuration.index, "label": configuration.label, "values": configuration.values}

    def get_method(self, run: Run) -> list[dict[str, str]]:
        """The run's method checks (runs.method), as its page's Method panel lists them."""
        return [dataclasses.asdict(check) for check in run_method(run)]

    def get_os_series(self, run: Run) -> dict[str, dict[str, list[float | None]]]:
        return run_os_series(run)


class RunSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunSample
        fields = ["second", "tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "warmup"]
