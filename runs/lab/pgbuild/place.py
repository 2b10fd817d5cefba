"""Where finished builds live: sealed, described by a manifest, found again, removed.

A build's files are the run user's until root seals them: the installed tree is renamed out of
the work dir (a rename moves a planted symlink, never what it points to), made root's and not
writable by anyone else, and only then verified and renamed to its prefix. So the prefix never
exists half-written, the probe's TRUSTED_PATH accepts it, and the run user cannot change the
binaries later. The manifest (<prefix>/benchlab-build.json) says what the build is; a prefix is
reused only when its manifest matches the options exactly.
"""

import json
import posixpath
from datetime import UTC, datetime

from runs.lab.errors import LabError
from runs.lab.host.probe import TRUSTED_PATH
from runs.lab.host.run_user import run_as_run_user
from runs.lab.pgbuild.model import BuildFailed, BuildPaths, BuildStep, BuiltInstall
from runs.lab.pgbuild.options import (
    BUILDS_ROOT,
    MANIFEST_NAME,
    BuildOptions,
    SourceKind,
    build_key,
    build_label,
    build_prefix,
    canonical_options,
)
from runs.lab.pgbuild.source import resolve_tarball
from runs.lab.pgbuild.verify import VerifiedFacts
from runs.lab.transport.interface import Transport

MANIFEST_FORMAT = 1
# Root's part: the image out of the user's work dir (only its last component is the user's, and
# rename does not follow it), then owned by root, no set-id bits, writable by root only.
_SEAL = (
    'set -e; mv -T -- "$1" "$2"; '
    'if [ -L "$2" ] || [ ! -d "$2" ]; then rm -f -- "$2"; echo "the installed tree is not a directory" >&2; exit 1; '
    "fi; "
    'chown -R -h 0:0 -- "$2"; chmod -R a-s,go-w -- "$2"; chmod 0755 -- "$2"'
)
# A stale build of the same prefix goes aside, the new one takes its name, the stale one goes.
_PLACE = (
    'set -e; if [ -e "$2" ] || [ -L "$2" ]; then mv -T -- "$2" "$3"; fi; '
    'if ! mv -T -- "$1" "$2"; then [ ! -e "$3" ] || mv -T -- "$3" "$2"; exit 1; fi; rm -rf --one-file-system -- "$3"'
)
# The manifest, as a new file: an entry of that name the build planted (a symlink to anything)
# is removed, not written through; nobody else can add one to the sealed tree meanwhile.
_WRITE_NEW = 'umask 022 && rm -rf -- "$1" && set -C && cat > "$1"'
_TRUSTED = f'{TRUSTED_PATH}; for p in "$@"; do trusted "$p" || exit 1; done'


def seal(transport: Transport, paths: BuildPaths) -> None:
    found = transport.run(["sh", "-c", _SEAL, "sh", paths.image, paths.staged], check=False)
    if found.exit_status != 0:
        raise BuildFailed(BuildStep.INSTALL, f"sealing the installed tree failed on {transport.label}: "
                          f"{found.stderr.strip()[:200]}", output=found.stderr)  # fmt: skip


def manifest_for(options: BuildOptions, facts: VerifiedFacts, source_sha256: str, job_name: str) -> dict[str, object]:
    return {
        "format": MANIFEST_FORMAT,
        "key": build_key(options),
        "label": build_label(options),
        "options": canonical_options(options),
        "source_sha256": source_sha256,
        "verified": {
            "version": facts.version,
            "postgres_version": facts.postgres_version,
            "pgbench_version": facts.pgbench_version,
            "block_size": facts.block_size,
            "wal_block_size": facts.wal_block_size,
            "segment_size": facts.segment_size,
        },
        "pg_config": facts.pg_config,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "job_name": job_name,
    }


def place(transport: Transport, paths: BuildPaths, options: BuildOptions, manifest: dict[str, object]) -> None:
    """The manifest into the sealed tree, then the tree renamed to its prefix (atomically)."""
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    transport.run(["sh", "-c", _WRITE_NEW, "sh", f"{paths.staged}/{MANIFEST_NAME}"], stdin=text.encode())
    moved = transport.run(["sh", "-c", _PLACE, "sh", paths.staged, build_prefix(options), paths.replaced], check=False)
    if moved.exit_status != 0:
        raise BuildFailed(BuildStep.VERIFY, f"moving the build into place failed on {transport.label}: "
                          f"{moved.stderr.strip()[:200]}", output=moved.stderr)  # fmt: skip


def install_from_manifest(prefix: str, manifest: dict[str, object], reused: bool) -> BuiltInstall:
    verified = manifest["verified"]
    if not isinstance(verified, dict):
        raise ValueError("no verified facts")
    return BuiltInstall(
        prefix=prefix,
        bin_dir=f"{prefix}/bin",
        version=str(verified["version"]),
        block_size=int(verified["block_size"]),
        wal_block_size=int(verified["wal_block_size"]),
        segment_size=int(verified["segment_size"]),
        pgbench_version=str(verified["pgbench_version"]),
        source_sha256=str(manifest["source_sha256"]),
        reused=reused,
    )


def _tarball_unchanged(transport: Transport, options: BuildOptions, manifest: dict[str, object]) -> bool:
    """A tarball given without a checksum is the same source only if it still hashes the same."""
    source = options.source
    if source.kind != SourceKind.TARBALL or source.sha256:
        return True
    try:
        path = resolve_tarball(transport, source)
    except BuildFailed:
        return False  # the build's source step says why
    found = run_as_run_user(transport, ["sha256sum", "--", path], check=False, timeout=900)
    return found.exit_status == 0 and found.stdout.split()[:1] == [manifest.get("source_sha256")]


def find_build(transport: Transport, options: BuildOptions) -> BuiltInstall | None:
    """A complete, verified build of exactly these options on the host, or None.

    Complete: its manifest matches the options, its programs are root's and nobody else can
    change them (or anything above them), and `postgres --version` still answers as recorded."""
    prefix = build_prefix(options)
    programs = [f"{prefix}/bin/postgres", f"{prefix}/bin/pgbench", f"{prefix}/{MANIFEST_NAME}"]
    if transport.run(["sh", "-c", _TRUSTED, "sh", *programs], check=False).exit_status != 0:
        return None
    found = transport.run(["cat", "--", f"{prefix}/{MANIFEST_NAME}"], check=False)
    try:
        manifest = json.loads(found.stdout) if found.exit_status == 0 else None
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            return None
        if manifest.get("key") != build_key(options) or manifest.get("options") != canonical_options(options):
            return None
        install = install_from_manifest(prefix, manifest, reused=True)
    except (ValueError, KeyError, TypeError):
        return None  # a manifest that does not say what it must: not a build to trust
    version = run_as_run_user(transport, [f"{install.bin_dir}/postgres", "--version"], check=False)
    if version.exit_status != 0 or version.stdout.strip() != manifest["verified"]["postgres_version"]:
        return None
    return install if _tarball_unchanged(transport, options, manifest) else None


def check_build_prefix(prefix: str) -> None:
    """Only a build's prefix: a direct child of BUILDS_ROOT, not a job's work or staging dir."""
    normal = posixpath.normpath(prefix) if isinstance(prefix, str) and prefix else ""
    name = posixpath.basename(normal)
    if normal != prefix or posixpath.dirname(normal) != BUILDS_ROOT or not name or name.startswith("."):
        raise LabError(
            f"refusing to remove {str(prefix)[:200]!r}: only a build directly under {BUILDS_ROOT} is removed"
        )


def remove_build(transport: Transport, prefix: str) -> None:
    """rm -rf of a build's prefix; anything else is refused (LabError)."""
    check_build_prefix(prefix)
    transport.run(["rm", "-rf", "--one-file-system", "--", prefix], timeout=600)
