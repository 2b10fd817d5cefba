"""What differs between compared groups: every specification field and every environment fact a
run recorded (kernel, PostgreSQL build, mount options as mounted, device, memory, CPU, pgbench,
settings as the server reported them), and a warning for each difference the grouping does not
explain - the question every published benchmark gets: "were they on the same kernel?"

A fact is explained when a grouping field determines it: grouping by device explains a
different device model; nothing explains a kernel that changed between two "ext4 default"
groups on one host. A fact that varies inside one group (repetitions run on different
environments) is always worth a warning.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models.fields.json import KT

from runs.comparison_query import group_label
from runs.lab.pg_settings import RESERVED_SETTINGS
from runs.models import Run
from runs.spec_labels import spec_value
from runs.specs import SPEC_FIELDS
from runs.templatetags.units import binary_size, page_size, pg_setting_text

if TYPE_CHECKING:
    from runs.comparison import Group

HOST = frozenset({"server_host_id", "device_id"})  # a device belongs to one host
# Settings that name a run's own port, directories and files: different for every run by design.
PER_RUN_SETTINGS = RESERVED_SETTINGS | {"config_file", "external_pid_file", "log_directory", "cluster_name"}
SETTINGS_ANNOTATION = "env_settings"


@dataclass(frozen=True)
class EnvironmentFact:
    key: str
    label: str
    path: str  # into Run.environment, as a Django JSON lookup
    explained_by: frozenset[str]
    shown: Callable[[str], str] = str


def _size(raw: str) -> str:
    return binary_size(int(raw)) if raw.isdigit() else raw


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
    # As the run's probe read it from the device (runs.services.drift_facts); runs before that recorded none.
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
)
SETTINGS_EXPLAINED_BY = frozenset({"pg_settings", "pg_install_id", "server_host_id", "device_id"})


def environment_annotations() -> dict[str, Any]:
    """What load_runs() selects of each run's environment instead of the whole JSON (whose host
    facts hold every block device's listing)."""
    annotations: dict[str, Any] = {f"env_{fact.key}": KT(f"environment__{fact.path}") for fact in ENVIRONMENT_FACTS}
    annotations[SETTINGS_ANNOTATION] = KT("environment__postgresql__non_default_settings")
    return annotations


@dataclass(frozen=True)
class Difference:
    label: str
    kind: str  # "specification", "environment" or "setting"
    cells: list[str]  # per group: its value, or its values joined when they vary inside it
    explained: bool  # by the grouping
    varies_within: list[int]  # indexes of the groups whose runs differ in it

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "values": self.cells,
            "explained": self.explained,
            "varies_within": self.varies_within,
        }


@dataclass(frozen=True)
class _Fact:
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


def _facts(runs: Sequence[Run]) -> list[_Fact]:
    facts = []
    for name in SPEC_FIELDS:

        def field_value(run: Run, name: str = name) -> str | None:
            return spec_value(run, name)

        facts.append(_Fact(group_label(name), "specification", field_value, frozenset({name})))
    for fact in ENVIRONMENT_FACTS:

        def value(run: Run, fact: EnvironmentFact = fact) -> str | None:
            raw = getattr(run, f"env_{fact.key}", None)
            return fact.shown(str(raw)) if raw not in (None, "") else None

        facts.append(_Fact(fact.label, "environment", value, fact.explained_by))
    settings = {run.pk: _run_settings(run) for run in runs}
    names = sorted({name for found in settings.values() if found for name in found})
    for name in names:

        def setting(run: Run, name: str = name) -> str | None:
            found = settings[run.pk]
            return None if found is None else found.get(name, "(default)")

        facts.append(_Fact(f"setting {name}", "setting", setting, SETTINGS_EXPLAINED_BY))
    return facts


def _explained(fact: _Fact, groups: Sequence["Group"], grouping: Sequence[str], per_group: list[list[str]]) -> bool:
    """Whether the fact follows from the grouping: some grouping field that can determine it splits
    the groups, and groups that agree on every such field agree on the fact (two groups on one
    device, one host, may not differ in kernel)."""
    positions = [i for i, name in enumerate(grouping) if name in fact.explained_by]
    if len({tuple(g.key[i] for i in positions) for g in groups}) <= 1:
        return False  # nothing that could explain it differs between the groups
    seen: dict[tuple[Any, ...], list[str]] = {}
    for group, values in zip(groups, per_group, strict=True):
        if seen.setdefault(tuple(group.key[i] for i in positions), values) != values:
            return False
    return True


def what_differs(groups: Sequence["Group"], grouping: Sequence[str]) -> tuple[list[Difference], list[str]]:
    """The facts that are not the same for every run, and the warnings they deserve."""
    differences: list[Difference] = []
    warnings: list[str] = []
    runs = [run for group in groups for run in group.runs]
    for fact in _facts(runs):
        per_group = [sorted({v for run in g.runs if (v := fact.value(run)) is not None}) for g in groups]
        if len({v for values in per_group for v in values}) <= 1:
            continue
        within = [g.index for g, values in zip(groups, per_group, strict=True) if len(values) > 1]
        explained = _explained(fact, groups, grouping, per_group)
        cells = [" / ".join(values) or "–" for values in per_group]
        differences.append(Difference(fact.label, fact.kind, cells, explained, within))
        if fact.kind == "specification":
            continue  # a field left out of the grouping pools its values on purpose
        if within:
            names = ", ".join(f"“{groups[i].label}” ({cells[i]})" for i in within)
            warnings.append(f"{fact.label} varies within {names}: its repetitions did not all run alike")
        elif not explained:
            shown = "; ".join(f"“{g.label}”: {cell}" for g, cell in zip(groups, cells, strict=True))
            warnings.append(f"{fact.label} differs between the groups and the grouping does not explain it ({shown})")
    return differences, warnings


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
