"""The campaign form: what the campaign is (name, repetitions, order), its base specification
(the queue form itself, so the base is a run one could queue alone), and the variables to sweep
with their values, which become campaigns.matrix.Variable objects in a fixed order (device varies slowest)."""

from typing import Any

from django import forms

from runs.campaigns.library_variables import PARAM_PREFIX
from runs.campaigns.matrix import NONE_SHOWN, MatrixError, Variable, check_variables
from runs.models import (
    CacheState,
    Campaign,
    DataState,
    Device,
    Driver,
    Filesystem,
    Host,
    PartitionMethod,
    PgInstall,
    QueryMode,
    RunOrder,
    Workload,
    WorkloadScript,
)

LINES_HELP = f"One value per line; {NONE_SHOWN} for none."


class CampaignForm(forms.ModelForm):
    class Meta:
        model = Campaign
        fields = [
            "name",
            "description",
            "repetitions",
            "target_ci_pct",
            "max_repetitions",
            "order",
            "seed",
            "fresh_database",
            "fio_baseline",
            "fio_canary",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 2}), "order": forms.RadioSelect}
        help_texts = {"seed": "For the shuffled order: empty picks one (and records it)."}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("seed") is not None and data.get("order") != RunOrder.SHUFFLED:
            self.add_error("seed", "A seed only means something with the shuffled order.")
        for message in adaptive_problems(
            data.get("repetitions"), data.get("target_ci_pct"), data.get("max_repetitions")
        ):
            self.add_error(message[0], message[1])
        return data


def adaptive_problems(repetitions: int | None, target: float | None, most: int | None) -> list[tuple[str, str]]:
    """What is wrong with an adaptive setting, as (field, message) pairs (the form and the API)."""
    if target is None and most is None:
        return []
    if target is None:
        return [("target_ci_pct", "A maximum of repetitions needs a target CI to stop at (or leave both empty).")]
    if most is None:
        return [("max_repetitions", "An adaptive campaign needs a maximum of repetitions.")]
    if repetitions is not None and repetitions < 2:
        return [("repetitions", "Adaptive repetition needs at least 2 repetitions first (a CI needs two values).")]
    if repetitions is not None and most < repetitions:
        return [("max_repetitions", f"The maximum must be at least the {repetitions} repetitions that come first.")]
    return []


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _commas(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


YES_NO = [("no", "no"), ("yes", "yes")]


def _param_lines(text: str) -> list[tuple[str, list[str]]]:
    """ "skew = 1.1, 3" lines as ("param:skew", ["1.1", "3"]); a line without "=" is the variable
    "param:<line>" with no values, which check_variables refuses by name."""
    found = []
    for line in _lines(text):
        name, _, values = line.partition("=")
        found.append((PARAM_PREFIX + name.strip(), _commas(values)))
    return found


class MatrixForm(forms.Form):
    """Each field is one variable; empty: not swept (the base's value for every configuration)."""

    device = forms.ModelMultipleChoiceField(
        Device.objects.select_related("host").order_by("host__name", "name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Across hosts: a run moves to its device's host and that host's install of the base version.",
    )
    filesystem = forms.MultipleChoiceField(
        choices=Filesystem.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    mkfs_options = forms.CharField(
        label="mkfs options", required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text=LINES_HELP
    )
    mount_options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": f"{NONE_SHOWN}\nnoatime\ndata=writeback,barrier=0"}),
        help_text=LINES_HELP,
    )
    pg_install = forms.ModelMultipleChoiceField(
        PgInstall.objects.filter(removed_at__isnull=True)  # a removed build's install runs nothing new
        .select_related("host")
        .order_by("host__name", "version", "block_size"),
        label="PostgreSQL installs",
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    pg_settings = forms.CharField(
        label="PostgreSQL settings",
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": "shared_buffers = 128MB\nshared_buffers = 1GB; work_mem = 64MB"}
        ),
        help_text=f"One configuration per line, settings separated by ';'; {NONE_SHOWN} for the defaults.",
    )
    scale = forms.CharField(required=False, help_text="Comma-separated, e.g. 10, 100, 1000.")
    clients = forms.CharField(
        label="clients (and threads)", required=False, help_text="Comma-separated; 8/2 means 8 clients on 2 threads."
    )
    driver = forms.MultipleChoiceField(
        choices=Driver.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Each with the base's workload if it is the driver's, else tpcb-like (pgbench) or "
        "oltp_read_write (sysbench).",
    )
    workload = forms.MultipleChoiceField(
        choices=Workload.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="A sysbench test runs on sysbench, the others on pgbench: one campaign may hold both.",
    )
    sysbench_tables = forms.CharField(required=False, help_text="Comma-separated, e.g. 1, 8, 32 (sysbench only).")
    sysbench_table_size = forms.CharField(
        label="sysbench table sizes (rows)",
        required=False,
        help_text="Comma-separated, e.g. 10000, 1000000 (sysbench only).",
    )
    query_mode = forms.MultipleChoiceField(
        choices=QueryMode.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    library_script = forms.ModelMultipleChoiceField(
        WorkloadScript.objects.all(),
        label="library scripts",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Each a configuration with that workload from the library (the base's parameters it declares kept).",
    )
    workload_params = forms.CharField(
        label="library script parameters",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "skew = 1.1, 1.5, 3"}),
        help_text="One parameter a line: its name = comma-separated values; each checked against the script's range.",
    )
    cache_state = forms.MultipleChoiceField(
        choices=CacheState.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    data_state = forms.MultipleChoiceField(
        choices=DataState.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    random_seed = forms.CharField(
        label="random seeds",
        required=False,
        help_text=f"Comma-separated, e.g. 1, 2, 3: each a configuration whose runs all use it; {NONE_SHOWN}: "
        "each run its own.",
    )
    warmup_run_s = forms.CharField(
        label="warm-up runs (s)", required=False, help_text="Comma-separated, e.g. 0, 300 (0: no warm-up run)."
    )
    warmup_run_clients = forms.CharField(
        label="warm-up run clients", required=False, help_text="Comma-separated, e.g. 10, 20."
    )
    # pgbench's own options (runs/lab/pgbench/options.py): what -i loads, and the latency limit.
    latency_limit_ms = forms.CharField(
        label="latency limits (ms)",
        required=False,
        help_text=f"Comma-separated, e.g. 5, 50; {NONE_SHOWN} for none.",
    )
    partitions = forms.CharField(required=False, help_text="Comma-separated, e.g. 0, 4, 16 (0: not partitioned).")
    partition_method = forms.MultipleChoiceField(
        choices=PartitionMethod.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    fillfactor = forms.CharField(required=False, help_text="Comma-separated, 10 to 100, e.g. 100, 90, 70.")
    unlogged_tables = forms.MultipleChoiceField(choices=YES_NO, required=False, widget=forms.CheckboxSelectMultiple)
    foreign_keys = forms.MultipleChoiceField(choices=YES_NO, required=False, widget=forms.CheckboxSelectMultiple)
    init_steps = forms.CharField(
        label="initialisation steps",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "dtgvp\ndtGvp"}),
        help_text=LINES_HELP,
    )
    client_host = forms.MultipleChoiceField(
        label="client hosts",
        choices=[],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Each choice is a configuration with pgbench on that one host (or on the server); "
        "to sweep several client hosts at once, give the API lists of host ids.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["device"].label_from_instance = lambda d: f"{d.host.name}:{d.name} ({d.get_kind_display()})"  # type: ignore[attr-defined]
        self.fields["pg_install"].label_from_instance = lambda pg: f"{pg.host.name}: {pg.choice_label}"  # type: ignore[attr-defined]
        clients = Host.objects.filter(runs_clients=True).order_by("name")
        self.fields["client_host"].choices = [("", "pgbench on the server itself")] + [  # type: ignore[attr-defined]
            (str(host.pk), host.name) for host in clients
        ]

    def variables(self) -> list[Variable]:
        """The swept variables, in the form's order (call after is_valid())."""
        data = self.cleaned_data
        found: list[tuple[str, list[Any]]] = [
            ("device", [device.pk for device in data.get("device") or []]),
            ("filesystem", list(data.get("filesystem") or [])),
            ("mkfs_options", _lines(data.get("mkfs_options", ""))),
            ("mount_options", _lines(data.get("mount_options", ""))),
            ("pg_install", [install.pk for install in data.get("pg_install") or []]),
            ("pg_settings", _lines(data.get("pg_settings", ""))),
            ("scale", _commas(data.get("scale", ""))),
            ("clients", _commas(data.get("clients", ""))),
            ("driver", list(data.get("driver") or [])),
            ("workload", list(data.get("workload") or [])),
            ("sysbench_tables", _commas(data.get("sysbench_tables", ""))),
            ("sysbench_table_size", _commas(data.get("sysbench_table_size", ""))),
            ("query_mode", list(data.get("query_mode") or [])),
            ("library_script", [script.pk for script in data.get("library_script") or []]),
            *_param_lines(data.get("workload_params", "")),
            ("client_host", [value or None for value in data.get("client_host") or []]),
            ("cache_state", list(data.get("cache_state") or [])),
            ("data_state", list(data.get("data_state") or [])),
            ("random_seed", _commas(data.get("random_seed", ""))),
            ("warmup_run_s", _commas(data.get("warmup_run_s", ""))),
            ("warmup_run_clients", _commas(data.get("warmup_run_clients", ""))),
            ("latency_limit_ms", _commas(data.get("latency_limit_ms", ""))),
            ("partitions", _commas(data.get("partitions", ""))),
            ("partition_method", list(data.get("partition_method") or [])),
            ("fillfactor", _commas(data.get("fillfactor", ""))),
            ("unlogged_tables", list(data.get("unlogged_tables") or [])),
            ("foreign_keys", list(data.get("foreign_keys") or [])),
            ("init_steps", _lines(data.get("init_steps", ""))),
        ]
        # A parameter's line is kept even without values: check_variables then says what is wrong with it.
        return [Variable(name, tuple(values)) for name, values in found if values or name.startswith(PARAM_PREFIX)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            check_variables(self.variables())
        except MatrixError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data
