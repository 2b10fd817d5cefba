"""A series: every run of one configuration, whenever it ran, as one line over time.

A series is named by its key, a hash of the run's specification (runs.bench.specs.RunSpec) without
what each run has of its own (PER_RUN_FIELDS: the random seed). That is the configuration a
comparison groups by by default (runs.bench.specs.CONFIGURATION_FIELDS), so a series and a
comparison's group of repetitions never disagree on what "the same configuration" is.

In the key, because each changes the number a run measures (two runs that differ in one of these
are not two readings of one quantity):
- the hosts (server, client hosts and whether they share a database), the device, its filesystem,
  mkfs and mount options: where the I/O goes and who drives it;
- the PostgreSQL install (by id: a build of other sources is another install) and its settings;
- the driver, the workload, its custom script's text, the library script (one row per version) and
  its parameters: what is measured;
- the scale, sysbench's tables and rows, pgbench -i's options: how big the data is and how laid out;
- clients, threads, rate and latency limits, query mode, log sampling (the transaction log costs
  throughput): how hard it is pushed;
- the duration, the warm-up (in-run and a separate run), cache and data states, the CHECKPOINT and
  the settle wait: a 60 s and a 600 s run, a cold and a warm cache, are not the same number.

Out of the key:
- the random seed: each repetition picks its own by design (a comparison's repetitions differ in it);
- what the run found rather than asked for - the kernel, firmware, the device's identity, the
  PostgreSQL build as it reported itself: a change in those is what a series is watched for, so it
  is shown as a drift event inside the series (runs.compare.drift), never as a new series;
- the campaign: the same configuration run in a study and run alone measures the same thing;
- labels (an install's or a host's name): renaming changes no number.

The key is 16 hex digits of SHA-256 over the specification's JSON with sorted keys: stable across
processes and releases as long as the specification's fields are, short enough for a URL, and part
of a stored change point's identity (series key + metric + the round's campaign or run).

It is stored: Run.series_key, written when the run is queued (runs.bench.services.runs, the one
writer of new runs: the form, the API, campaigns, their retries and "Run again" all go through it;
migration 0036_run_series_key filled in the runs before it), so a series' runs are an index lookup.
A change to the specification's fields, or to how the key is computed, changes the keys of new runs
only: it needs a migration that writes every run's key again (as 0036 did), or old and new runs of
one configuration part ways.
"""

import re
from collections.abc import Mapping
from typing import Any

from runs.bench.specs import CONFIGURATION_KEY_LENGTH, SPEC_FIELDS, RunSpec, configuration_key

KEY_LENGTH = CONFIGURATION_KEY_LENGTH
KEY_PATTERN = re.compile(rf"[0-9a-f]{{{KEY_LENGTH}}}")
# The fields a series' title names (the rest are on its page): where, what, how hard, how long.
TITLE_FIELDS = (
    *("server_host_id", "device_id", "filesystem", "mount_options", "pg_install_id"),  # where
    *("driver", "workload", "library_script_id", "workload_params"),  # what
    *("scale", "sysbench_tables", "sysbench_table_size", "clients", "threads", "duration_s"),  # how much
)


def series_key(spec: RunSpec) -> str:
    """The key of the series the spec's runs belong to (runs.bench.specs.configuration_key: computed
    there, as a run is given it when queued, and the bench may not import the watch)."""
    return configuration_key(spec)


def spec_of_row(row: Mapping[str, Any]) -> RunSpec:
    """The spec of a run read as values (the Run columns by their spec names, client_host_ids a
    list of ids in the run's order): a series is keyed without loading whole runs."""
    return RunSpec(**{name: row[name] for name in SPEC_FIELDS})


def key_checked(key: str) -> str:
    """The key from a URL, or ValueError saying what a key looks like."""
    if not KEY_PATTERN.fullmatch(key):
        raise ValueError(f"a series key is {KEY_LENGTH} hexadecimal digits (0-9, a-f), not {key[:40]!r}")
    return key
