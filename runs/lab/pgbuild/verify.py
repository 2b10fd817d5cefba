"""The VERIFY step: the sealed install asked what it is, before it becomes a prefix.

As the run user, from the staged tree (PostgreSQL is relocatable): `postgres --version`,
`pgbench --version`, then a throw-away cluster in the work dir on a unix socket only (no TCP,
its own socket directory, a free port: postgres.throwaway_cluster) that says its compiled-in
block size, WAL block size and segment size. A build that is not what was asked for fails here.
"""

import re
from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.host.run_user import run_as_run_user
from runs.lab.pgbuild.model import BuildFailed, BuildStep
from runs.lab.pgbuild.options import BuildOptions
from runs.lab.postgres.cluster import psql, throwaway_cluster
from runs.lab.transport.interface import Transport

_SIZES_SQL = (
    "SELECT string_agg(name || '=' || setting || '=' || coalesce(unit, ''), ' ' ORDER BY name) FROM pg_settings "
    "WHERE name IN ('block_size', 'wal_block_size', 'segment_size')"
)
_UNIT_BYTES = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3}


@dataclass(frozen=True)
class VerifiedFacts:
    version: str  # "15.20"
    postgres_version: str  # `postgres --version`'s line
    pgbench_version: str  # `pgbench --version`'s line
    block_size: int  # bytes
    wal_block_size: int
    segment_size: int
    pg_config: dict[str, str]  # configure arguments, compiler and flags as pg_config reports them


def setting_bytes(setting: str, unit: str) -> int:
    """A size setting in bytes: "131072" in units of "8kB" is 1 GB; no unit means bytes."""
    found = re.fullmatch(r"([0-9]*)(B|kB|MB|GB)", unit)
    if not unit:
        return int(setting)
    if not found:
        raise ValueError(f"unknown unit {unit!r}")
    return int(setting) * int(found.group(1) or 1) * _UNIT_BYTES[found.group(2)]


def parse_sizes(text: str) -> dict[str, int]:
    """ "block_size=4096= segment_size=262144=4kB wal_block_size=8192=" -> bytes by name."""
    sizes = {}
    for item in text.split():
        name, setting, unit = [*item.split("="), "", ""][:3]
        sizes[name] = setting_bytes(setting, unit)
    return sizes


def _line(transport: Transport, argv: list[str]) -> str:
    return run_as_run_user(transport, argv).stdout.strip()


def _mismatches(options: BuildOptions, sizes: dict[str, int]) -> list[str]:
    wanted = {
        "block_size": options.block_size_kb * 1024,
        "wal_block_size": options.wal_block_size_kb * 1024,
        "segment_size": options.segment_size_gb * 1024**3,
    }
    return [
        f"{name} is {sizes.get(name)} bytes, not {want}" for name, want in wanted.items() if sizes.get(name) != want
    ]


def verify_install(transport: Transport, options: BuildOptions, bin_dir: str, verify_dir: str) -> VerifiedFacts:
    postgres_version = _line(transport, [f"{bin_dir}/postgres", "--version"])
    pgbench_version = _line(transport, [f"{bin_dir}/pgbench", "--version"])
    found = re.search(r"\(PostgreSQL\) (\S+)", postgres_version)
    version = found.group(1) if found else ""
    if version != options.version:
        raise BuildFailed(
            BuildStep.VERIFY,
            f"the build says it is {postgres_version[:80]!r}, not PostgreSQL {options.version}: "
            "is the tarball of another release?",
        )
    try:
        with throwaway_cluster(transport, bin_dir, verify_dir, settings={}) as cluster:
            sizes = parse_sizes(psql(transport, cluster, _SIZES_SQL))
    except LabError as exc:
        raise BuildFailed(BuildStep.VERIFY, f"the build's test cluster failed: {str(exc).splitlines()[0][:300]}",
                          output=str(exc)) from exc  # fmt: skip
    if wrong := _mismatches(options, sizes):
        raise BuildFailed(BuildStep.VERIFY, f"the build is not what was asked for: {'; '.join(wrong)}")
    pg_config = {key: _line(transport, [f"{bin_dir}/pg_config", f"--{key}"]) for key in ("configure", "cc", "cflags")}
    return VerifiedFacts(
        version=version,
        postgres_version=postgres_version,
        pgbench_version=pgbench_version,
        block_size=sizes["block_size"],
        wal_block_size=sizes["wal_block_size"],
        segment_size=sizes["segment_size"],
        pg_config=pg_config,
    )
