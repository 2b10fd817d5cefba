"""A run's iostat and vmstat samples, stored as one PostgreSQL array per column (RunOsSeries),
and the per-run means that lists and comparisons read instead of the series (Run.os_means,
Run.device_util_pct).

Every numeric column is stored; the means cover the ones a comparison shows side by side.
"""

import statistics
from collections.abc import Sequence
from dataclasses import fields

from django.db import transaction

from runs.common.db_retry import with_database_retry
from runs.lab.benchmark.metrics import OsMetrics
from runs.lab.parse.sysstat import IostatSample, VmstatSample
from runs.models import OsSource, Run, RunOsSeries

OS_MEAN_COLUMNS: dict[str, tuple[str, ...]] = {
    OsSource.IOSTAT.value: ("util_pct", "r_await_ms", "w_await_ms", "r_per_s", "w_per_s"),
    OsSource.VMSTAT.value: ("us", "sy", "wa", "id"),
}
# Not series: the device is the run's own for every iostat sample (the filter that picked them),
# and the timestamps stay in the raw outputs.
NOT_SERIES = frozenset({"timestamp", "device"})

Columns = dict[str, list[float | None]]  # column name -> a value per sample
OsMeans = dict[str, dict[str, float | None]]  # source -> column -> mean


def os_series_columns(
    sample_type: type[IostatSample] | type[VmstatSample], samples: Sequence[IostatSample] | Sequence[VmstatSample]
) -> Columns:
    """The samples turned around: a list per numeric column, in sample order; empty without samples."""
    if not samples:
        return {}
    names = [f.name for f in fields(sample_type) if f.name not in NOT_SERIES]
    return {name: [_number(getattr(sample, name)) for sample in samples] for name in names}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def os_means(by_source: dict[str, Columns]) -> OsMeans:
    """Each shown column's mean over the samples that have a value; None when none has."""
    return {
        source: {name: _mean(by_source.get(source, {}).get(name, [])) for name in names}
        for source, names in OS_MEAN_COLUMNS.items()
    }


def _mean(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.fmean(present) if present else None


def os_series_store(run: Run, os: OsMetrics) -> OsMeans:
    """Replace the run's stored series by these samples' columns; returns their means (for
    Run.os_means, saved by the caller with the run's other results)."""
    by_source = {
        OsSource.IOSTAT.value: os_series_columns(IostatSample, os.iostat),
        OsSource.VMSTAT.value: os_series_columns(VmstatSample, os.vmstat),
    }

    def replace() -> None:
        rows = [  # new rows each time: a failed attempt may have given these ids that were rolled back
            RunOsSeries(run=run, source=source, column=name, values=values)
            for source, columns in by_source.items()
            for name, values in columns.items()
        ]
        with transaction.atomic():  # a reader never sees half of them
            RunOsSeries.objects.filter(run=run).delete()
            RunOsSeries.objects.bulk_create(rows)

    # The whole transaction again while benchlab's database restarts: a replacement done twice
    # leaves the same series.
    with_database_retry(replace, f"run {run.pk}: storing its iostat and vmstat series")
    return os_means(by_source)
