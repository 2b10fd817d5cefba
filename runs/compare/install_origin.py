"""How a run's PostgreSQL was built, as a comparison compares it: a benchlab build's source and
configure flags (its PgBuild row), or Debian's package, or an install benchlab did not build.

Read from the inventory rather than from Run.environment: an install's build never changes (a
new build is a new install), so every run, old ones included, reads the same words. The page
sizes are left out on purpose: they are facts of their own, and a page-size comparison asks
whether anything *but* them differs.
"""

import os
import re
import shlex

from django.core.exceptions import ObjectDoesNotExist

from runs.models import BuildSourceKind, PgBuild, PgInstall

DEBIAN_BIN_DIR = re.compile(r"/usr/lib/postgresql/[1-9][0-9]*/bin")  # where Debian's package installs it


def _build_of(pg: PgInstall) -> PgBuild | None:
    try:
        return pg.build  # select_related("pg_install__build") in a comparison: no query
    except ObjectDoesNotExist:
        return None


def _source(build: PgBuild) -> str:
    if build.source_kind == BuildSourceKind.DEBIAN:
        return f"Debian source {build.package} {build.package_version}".rstrip()
    # The tarball's name, not its path on the host: a shared page shows this.
    checked = f" (SHA-256 {build.sha256[:12]}…)" if build.sha256 else ""
    return f"tarball {os.path.basename(build.tarball_path)}{checked}"


def _flags(build: PgBuild) -> str:
    flags = " ".join(build.configure_flags) if build.configure_flags else "no extra configure flags"
    return flags if build.segment_size_gb == 1 else f"{flags}, {build.segment_size_gb} GB segments"


def configure_flags(configure: str) -> str:
    """`pg_config --configure` ("'--prefix=/opt/pg' '--enable-debug'") without the install's
    page sizes and without anything naming a path (its directories say where, not how, and a
    shared page must not show the host's paths)."""
    try:
        words = shlex.split(configure)
    except ValueError:  # unbalanced quotes: compare it as it is
        return configure.strip()
    own = ("--with-blocksize=", "--with-wal-blocksize=")
    return " ".join(word for word in words if not word.startswith(own) and "/" not in word)


def install_origin(pg: PgInstall, configure: str | None = None) -> str:
    """ "built by benchlab from Debian source postgresql-15 15.18-0+deb12u1, no extra configure
    flags", "Debian package", or "installed on the host, not built by benchlab" with the flags
    its pg_config gave the run (`configure`, runs.bench.services.drift_facts), when it recorded them."""
    build = _build_of(pg)
    if build is not None:
        return f"built by benchlab from {_source(build)}, {_flags(build)}"
    if DEBIAN_BIN_DIR.fullmatch(pg.bin_dir):
        return "Debian package"
    flags = configure_flags(configure) if configure else ""
    return "installed on the host, not built by benchlab" + (f", configured with {flags}" if flags else "")
