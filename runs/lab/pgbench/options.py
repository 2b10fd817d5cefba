"""pgbench's own options, checked without a machine: what `pgbench -i` loads (InitOptions) and
how `pgbench` measures (RunOptions). Pure, as runs/lab/options.py is (which re-exports them with
the other drivers' and the storage's options): the queue form, the API and campaigns check a run
with these before a host is touched, and runs/lab/pgbench/commands.py builds the command lines
from the same values. Another driver (sysbench, ...) gets a module of its own beside this one.
"""

from dataclasses import dataclass

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.script import check_custom_script

BUILTIN_SCRIPTS = ("tpcb-like", "simple-update", "select-only")
QUERY_MODES = ("simple", "extended", "prepared")


INIT_STEPS = "dtgGvpf"  # pgbench -I's letters: drop, tables, generate (client/server side), vacuum, keys, fks
DEFAULT_INIT_STEPS = "dtgvp"  # what pgbench -i does without -I
PARTITION_METHODS = ("range", "hash")
MAX_PARTITIONS = 1000  # far beyond where partitioning pgbench_accounts is a question of storage
MIN_LATENCY_LIMIT_MS, MAX_LATENCY_LIMIT_MS = 0.1, 600_000.0  # ten minutes
_INIT_STEP_NAMES = {
    "d": "d (drop)",
    "t": "t (create tables)",
    "g": "g (generate client-side)",
    "G": "G (generate server-side)",
    "v": "v (vacuum)",
    "p": "p (primary keys)",
    "f": "f (foreign keys)",
}


def check_init_steps(steps: str, foreign_keys: bool) -> None:
    """pgbench -I's steps as a benchlab run can use them. pgbench itself takes any string of its
    letters; a run loads a fresh cluster and then measures, so it is held to more: each letter at
    most once, tables created and filled, and every step after what it needs (a foreign key needs
    its primary keys). The foreign-keys choice and the letter f must say the same."""
    unknown = sorted({step for step in steps if step not in INIT_STEPS})
    if unknown:
        raise InvalidOption(
            f"initialisation steps: {', '.join(repr(s) for s in unknown)} is not a pgbench step; "
            f"use the letters {INIT_STEPS} in order (d drop, t tables, g or G generate, v vacuum, "
            "p primary keys, f foreign keys)"
        )
    repeated = sorted({step for step in steps if steps.count(step) > 1})
    if repeated:
        raise InvalidOption(f"initialisation steps: {', '.join(repeated)} is given twice; give each step once")
    if "g" in steps and "G" in steps:
        raise InvalidOption("initialisation steps: choose g (client-side) or G (server-side) generation, not both")
    for needed in ("t", "gG"):
        if not any(step in steps for step in needed):
            names = " or ".join(_INIT_STEP_NAMES[s] for s in needed)
            raise InvalidOption(f"initialisation steps {steps!r} lack {names}: the run measures loaded tables")
    # What must not come after each step: what it needs (only that: "dtpg", keys before the data,
    # is a load worth measuring).
    before = {"t": "d", "g": "dt", "G": "dt", "v": "dt", "p": "dt", "f": "dtp"}
    for position, step in enumerate(steps):
        later = [other for other in before.get(step, "") if other in steps[position + 1 :]]
        if later:
            raise InvalidOption(
                f"initialisation steps {steps!r}: {_INIT_STEP_NAMES[later[0]]} must come before "
                f"{_INIT_STEP_NAMES[step]}"
            )
    if "f" in steps and "p" not in steps:
        raise InvalidOption(f"initialisation steps {steps!r}: f (foreign keys) needs p (primary keys) before it")
    if ("f" in steps) != foreign_keys:
        raise InvalidOption(
            "initialisation steps include f (foreign keys): tick foreign keys too, or leave f out"
            if foreign_keys is False
            else f"foreign keys are asked for: add f after p to the initialisation steps {steps!r}, or leave them empty"
        )


@dataclass(frozen=True)
class InitOptions:
    """pgbench -i: the scale and pgbench's own options for how the tables are made (its defaults
    here are pgbench's, so a run that sets none loads as it always did)."""

    scale: int
    partitions: int = 0  # --partitions; 0: pgbench_accounts is not partitioned
    partition_method: str = ""  # --partition-method with partitions; "": pgbench's default (range)
    fillfactor: int = 100  # -F
    unlogged_tables: bool = False  # --unlogged-tables
    foreign_keys: bool = False  # --foreign-keys (the step f)
    init_steps: str = ""  # -I; "": pgbench's default (dtgvp, and f with foreign keys)

    def validate(self) -> None:
        if not 1 <= self.scale <= 100_000:
            raise InvalidOption("scale must be between 1 and 100000")
        if not 0 <= self.partitions <= MAX_PARTITIONS:
            raise InvalidOption(f"partitions must be between 0 (none) and {MAX_PARTITIONS}; got {self.partitions}")
        if self.partition_method and self.partition_method not in PARTITION_METHODS:
            raise InvalidOption(
                f"the partition method must be one of {', '.join(PARTITION_METHODS)}; got {self.partition_method!r}"
            )
        if self.partition_method and not self.partitions:
            raise InvalidOption(
                f"a partition method ({self.partition_method}) needs partitions: set partitions from 1 to "
                f"{MAX_PARTITIONS}, or leave the method empty"
            )
        if not 10 <= self.fillfactor <= 100:
            raise InvalidOption(f"fillfactor must be between 10 and 100 (%); got {self.fillfactor}")
        if self.init_steps:
            check_init_steps(self.init_steps, self.foreign_keys)

    def args(self) -> list[str]:
        """pgbench -i's options beyond the scale; none for pgbench's defaults."""
        argv: list[str] = []
        if self.init_steps:
            argv.append(f"--init-steps={self.init_steps}")
        if self.fillfactor != 100:
            argv.append(f"--fillfactor={self.fillfactor}")
        if self.partitions:
            argv.append(f"--partitions={self.partitions}")
        if self.partition_method:
            argv.append(f"--partition-method={self.partition_method}")
        if self.unlogged_tables:
            argv.append("--unlogged-tables")
        if self.foreign_keys and "f" not in self.init_steps:
            argv.append("--foreign-keys")
        return argv


@dataclass(frozen=True)
class RunOptions:
    builtin: str | None = "tpcb-like"  # or None with a custom script
    custom_script: str | None = None  # the script's text, uploaded to the run directory
    clients: int = 1
    threads: int = 1
    duration_s: int = 60  # -T; progress and aggregate logs are per second (a sample is a second)
    query_mode: str = "simple"
    rate_tps: float | None = None  # -R
    # A fraction of transactions to log one by one (-l --sampling-rate) for latency
    # percentiles; None logs per-interval aggregates instead (pgbench cannot do both).
    log_sampling_rate: float | None = None
    random_seed: int | None = None  # --random-seed; None: pgbench's own default (not reproducible)
    # --latency-limit: slower transactions are counted as late; with -R, those already this late
    # when due are skipped (never sent). pgbench takes it without -R too (late counted, none skipped).
    latency_limit_ms: float | None = None

    def validate(self) -> None:
        if (self.builtin is None) == (self.custom_script is None):
            raise InvalidOption("choose either a builtin workload or a custom script")
        if self.builtin is not None and self.builtin not in BUILTIN_SCRIPTS:
            raise InvalidOption(f"unknown builtin workload {self.builtin!r}")
        if self.custom_script is not None:
            if not self.custom_script.strip():
                raise InvalidOption("the custom script is empty")
            # \shell and \setshell run commands on the host: only harmless meta-commands pass.
            check_custom_script(self.custom_script)
        if self.clients < 1 or self.threads < 1:
            raise InvalidOption("clients and threads must be at least 1")
        if self.threads > self.clients:
            raise InvalidOption("threads cannot exceed clients")
        if self.duration_s < 1:
            raise InvalidOption("duration must be at least 1 s")
        if self.query_mode not in QUERY_MODES:
            raise InvalidOption(f"query mode must be one of {', '.join(QUERY_MODES)}")
        if self.rate_tps is not None and self.rate_tps <= 0:
            raise InvalidOption("the rate limit must be positive")
        if self.log_sampling_rate is not None and not 0 < self.log_sampling_rate <= 1:
            raise InvalidOption("the log sampling rate must be above 0 and at most 1")
        limit = self.latency_limit_ms
        if limit is not None and not MIN_LATENCY_LIMIT_MS <= limit <= MAX_LATENCY_LIMIT_MS:
            raise InvalidOption(
                f"the latency limit must be between {MIN_LATENCY_LIMIT_MS:g} and {MAX_LATENCY_LIMIT_MS:g} ms; "
                f"got {limit:g}"
            )
        if self.random_seed is not None and not 0 <= self.random_seed < 2**64:
            raise InvalidOption("the random seed must be a whole number from 0 to 2^64 - 1")
