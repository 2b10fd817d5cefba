"""What differs between compared groups: every specification field and every environment fact a
run recorded (kernel, PostgreSQL build, mount options as mounted, device, memory, CPU, pgbench,
settings as the server reported them), and a warning for each difference the grouping does not
explain - the question every published benchmark gets: "were they on the same kernel?"

A fact is explained when a grouping field determines it: grouping by device explains a
different device model; nothing explains a kernel that changed between two "ext4 default"
groups on one host, nor 8 clients against 4 between two devices grouped by device. A fact that
varies inside one group (repetitions run on different environments, or a field the grouping
pools) is always worth a warning. When the groups differ in page size, the install does not
explain its version or build: the question is then the page size (runs.compare.confounds).
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models.fields.json import KT

from runs.bench.driver_checks import unused_fields
from runs.bench.spec_labels import spec_value
from runs.bench.specs import PER_RUN_FIELDS, SPEC_FIELDS
from runs.common.units import binary_size, page_size, pg_setting_text
from runs.compare.install_origin import install_origin
from runs.compare.query import Group, group_label
from runs.lab.postgres.settings import RESERVED_SETTINGS
from runs.models import Driver, Run

HOST = frozenset({"server_host_id", "device_id"})  # a device belongs to one host
# Settings that name a run's own port, directories and files: different for every run by design.
PER_RUN_SETTINGS = RESERVED_SETTINGS | {"config_file", "external_pid_file", "log_directory", "cluster_name"}
SETTINGS_ANNOTATION = "env_settings"
CONFIGURE_ANNOTATION = "env_configure"


@dataclass(frozen=True)
class EnvironmentFact:
    key: str
    label: str
    path: str  # into Run.environment, as a Django JSON lookup
    explained_by: frozenset[str]
    shown: Callable[[str], str] = str


def _size(raw: str) -> str:
    return binary_size(int(raw)) if raw.isdigit() else raw


def _on_off(raw: str) -> str:
    # A JSON true/false comes out of the database as the text "true"/"false".
    return {"true": "on", "false": "off"}.get(raw, raw)


def short_version(raw: str) -> str:
    # "PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64-pc-linux-gnu, compiled by ..."
    return raw.split(" on ", 1)[0]


ENVIRONMENT_FACTS = (
    EnvironmentFact("kernel", "kernel", "host__kernel", HOST),
    EnvironmentFact("distribution", "distribution", "host__distribution", HOST),
    EnvironmentFact("cpu_model", "CPU", "host__cpu_model", HOST),
    EnvironmentFact("cpu_cores", "CPU cores", "host__cpu_cores", HOST),
    EnvironmentFact("memory", "RAM", "host__memory_bytes", HOST, _size),
    EnvironmentFact("device_model", "device model", "device__model", frozenset({"device_id"})),
    # As the run's probe read it from the device (runs.bench.services.drift_facts); runs before that recorded none.
    EnvironmentFact("device_firmware", "device firmware", "device__probed__firmware", frozenset({"device_id"})),
    EnvironmentFact("device_capacity", "device capacity", "device__capacity_bytes", frozenset({"device_id"}), _size),
    EnvironmentFact(
        "mounted_options",
        "mount options as mounted",
        "filesystem__mount_options",
        frozenset({"device_id", "filesystem", "mount_options"}),
    ),
    EnvironmentFact(
        "pg_version", "PostgreSQL version", "postgresql__version", frozenset({"pg_install_id"}), short_version
    ),
    # In kB as PostgreSQL writes them ("8 kB"), as the run page and the groups' labels do.
    EnvironmentFact("block_size", "page size", "postgresql__block_size", frozenset({"pg_install_id"}), page_size),
    EnvironmentFact(
        "wal_block_size", "WAL block size", "postgresql__wal_block_size", frozenset({"pg_install_id"}), page_size
    ),
    EnvironmentFact(
        "pgbench_version", "pgbench version", "pgbench__version", frozenset({"pg_install_id", "client_host_ids"})
    ),
    EnvironmentFact(
        "pgbench_host", "pgbench ran on", "pgbench__host", frozenset({"client_host_ids", "server_host_id"})
    ),
    EnvironmentFact("client_kernel", "client kernel", "client__kernel", frozenset({"client_host_ids"})),
    # The host and device as each run found them (runs.lab.benchmark.method_readings); older runs recorded none.
    EnvironmentFact("governor", "CPU governor", "method__host__governor", HOST),
    EnvironmentFact("boost", "CPU boost", "method__host__boost", HOST, _on_off),
    EnvironmentFact("smt", "SMT", "method__host__smt", HOST, _on_off),
    EnvironmentFact("thp", "transparent huge pages", "method__host__thp", HOST),
    EnvironmentFact("swappiness", "swappiness", "method__host__swappiness", HOST),
    EnvironmentFact("numa_nodes", "NUMA nodes", "method__host__numa_nodes", HOST),
    EnvironmentFact("io_scheduler", "I/O scheduler", "method__device__scheduler", frozenset({"device_id"})),
    EnvironmentFact("write_cache", "device write cache", "method__device__write_cache", frozenset({"device_id"})),
)
# Spec fields another spec field fixes: a device, and an install, are on one host.
DETERMINED_BY = {"server_host_id": frozenset({"device_id", "pg_install_id"})} | {
    # A field one driver does not use (shown as a dash and the driver): the driver explains it differing.
    name: frozenset({"driver"})
    for name in unused_fields(Driver.PGBENCH) | unused_fields(Driver.SYSBENCH)
}
PAGE_SIZE = "block_size"
# What an install also fixes besides its page size: not explained by it when the page size is the question.
BUILD_FACTS = ("pg_version", "build", "wal_block_size", "pgbench_version")
SETTINGS_EXPLAINED_BY = frozenset({"pg_settings", "pg_install_id", "server_host_id", "device_id"})


def environment_annotations() -> dict[str, Any]:
    """What load_runs() selects of each run's environment instead of the whole JSON (whose host
    facts hold every block device's listing)."""
    annotations: dict[str, Any] = {f"env_{fact.key}": KT(f"environment__{fact.path}") for fact in ENVIRONMENT_FACTS}
    annotations[SETTINGS_ANNOTATION] = KT("environment__postgresql__non_default_settings")
    annotations[CONFIGURE_ANNOTATION] = KT("environment__postgresql__configure")  # pg_config's, when recorded
    return annotations


@dataclass(frozen=True)
class Difference:
    key: str  # the spec field's name, the environment fact's key, or "setting <name>"
    label: str
    kind: str  # "specification", "environment" or "setting"
    values: list[list[str]]  # per group: its runs' distinct values
    explained: bool  # by the grouping
    varies_within: list[int]  # indexes of the groups whose runs differ in it

    @property
    def cells(self) -> list[str]:
        """Per group: its value, or its values joined when they vary inside it."""
        return [" / ".join(values) or "–" for values in self.values]

    @property
    def between(self) -> bool:
        """The groups do not all have the same values."""
        return any(values != self.values[0] for values in self.values)

    @property
    def confounded(self) -> bool:
        """Mixed into the comparison: it varies inside a group, or differs between groups
        without the grouping explaining it."""
        return bool(self.varies_within) or (self.between and not self.explained)

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "values": self.cells,
            "explained": self.explained,
            "between": self.between,
            "varies_within": self.varies_within,
            "confounded": self.confounded,
        }


@dataclass(frozen=True)
class _Fact:
    key: str
    label: str
    kind: str
    value: Callable[[Run], str | None]  # None: the run recorded no environment (it never ran)
    explained_by: frozenset[str]


def _run_settings(run: Run) -> dict[str, str] | None:
    raw = getattr(run, SETTINGS_ANNOTATION, None)
    if not raw:
        return None
    settings = json.loads(raw)
    pg = run.pg_install  # with the install's page sizes: "shared_buffers=128MB", not 16384 pages
    return {
        name: pg_setting_text(name, value, pg.block_size, pg.wal_block_size)
        for name, value in settings.items()
        if name not in PER_RUN_SETTINGS
    }


def _spec_facts() -> list[_Fact]:
    facts = []
    for name in SPEC_FIELDS:

        def field_value(run: Run, name: str = name) -> str | None:
            return spec_value(run, name)

        explained_by = frozenset({name}) | DETERMINED_BY.get(name, frozenset())
        facts.append(_Fact(name, group_label(name), "specification", field_value, explained_by))
    return facts


def _environment_facts() -> list[_Fact]:
    facts = []
    for fact in ENVIRONMENT_FACTS:

        def value(run: Run, fact: EnvironmentFact = fact) -> str | None:
            raw = getattr(run, f"env_{fact.key}", None)
            return fact.shown(str(raw)) if raw not in (None, "") else None

        facts.append(_Fact(fact.key, fact.label, "environment", value, fact.explained_by))
        if fact.key == "pg_version":  # how it was built, beside its version
            facts.append(_Fact("build", "PostgreSQL build", "environment", run_origin, frozenset({"pg_install_id"})))
    return facts


def run_origin(run: Run) -> str:
    """How the run's PostgreSQL was built (runs.compare.install_origin), with the flags its pg_config gave."""
    return install_origin(run.pg_install, getattr(run, CONFIGURE_ANNOTATION, None))


def _facts(runs: Sequence[Run]) -> list[_Fact]:
    facts = _spec_facts() + _environment_facts()
    settings = {run.pk: _run_settings(run) for run in runs}
    names = sorted({name for found in settings.values() if found for name in found})
    for name in names:

        def setting(run: Run, name: str = name) -> str | None:
            found = settings[run.pk]
            return None if found is None else found.get(name, "(default)")

        facts.append(_Fact(f"setting {name}", f"setting {name}", "setting", setting, SETTINGS_EXPLAINED_BY))
    return facts


def _explained(
    explained_by: frozenset[str], groups: Sequence[Group], grouping: Sequence[str], per_group: list[list[str]]
) -> bool:
    """Whether the fact follows from the grouping: some grouping field that can determine it splits
    the groups, and groups that agree on every such field agree on the fact (two groups on one
    device, one host, may not differ in kernel)."""
    positions = [i for i, name in enumerate(grouping) if name in explained_by]
    if len({tuple(g.key[i] for i in positions) for g in groups}) <= 1:
        return False  # nothing that could explain it differs between the groups
    seen: dict[tuple[Any, ...], list[str]] = {}
    for group, values in zip(groups, per_group, strict=True):
        if seen.setdefault(tuple(group.key[i] for i in positions), values) != values:
            return False
    return True


def _per_group(fact: _Fact, groups: Sequence[Group]) -> list[list[str]]:
    return [sorted({v for run in g.runs if (v := fact.value(run)) is not None}) for g in groups]


def _page_sizes_differ(facts: Sequence[_Fact], groups: Sequence[Group]) -> bool:
    """The groups ran with different page sizes: then the page size is the question."""
    per_group = _per_group(next(fact for fact in facts if fact.key == PAGE_SIZE), groups)
    return any(values != per_group[0] for values in per_group)


def what_differs(groups: Sequence[Group], grouping: Sequence[str]) -> list[Difference]:
    """The facts that are not the same for every run, each saying whether the grouping explains it."""
    differences: list[Difference] = []
    runs = [run for group in groups for run in group.runs]
    facts = _facts(runs)
    page_question = _page_sizes_differ(facts, groups)
    for fact in facts:
        per_group = _per_group(fact, groups)
        if len({v for values in per_group for v in values}) <= 1:
            continue
        explained_by = fact.explained_by
        if page_question and fact.key in BUILD_FACTS:
            explained_by = explained_by - {"pg_install_id"}  # the install differs in more than its page size
        within = [g.index for g, values in zip(groups, per_group, strict=True) if len(values) > 1]
        explained = _explained(explained_by, groups, grouping, per_group)
        if fact.key in PER_RUN_FIELDS:  # each run its own seed, by design: shown, never a confound
            within, explained = [], True
        differences.append(Difference(fact.key, fact.label, fact.kind, per_group, explained, within))
    return differences


def environment_common(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """The environment facts every run that ran shares: the report's "environment" section."""
    common = []
    for fact in _facts(runs):
        if fact.kind == "specification":
            continue
        values = {v for run in runs if (v := fact.value(run)) is not None}
        if len(values) == 1:
            common.append((fact.label, values.pop()))
    return common
