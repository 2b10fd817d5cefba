"""The form that asks for a PostgreSQL build (page and API alike): a host, a source, page sizes
and configure flags, each checked by the lab layer's own rules (pg_build_options), so the page,
the API and the service refuse exactly the same things with the same words."""

import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.db.models import QuerySet

from runs.lab.pg_build_options import (
    BLOCK_SIZES_KB,
    CONFIGURE_FLAGS,
    SEGMENT_SIZES_GB,
    WAL_BLOCK_SIZES_KB,
    BuildOptions,
    BuildSource,
    SourceKind,
    build_option_errors,
    debian_upstream_version,
)
from runs.models import BuildSourceKind, Host, PgInstall

# Where Debian installs a packaged PostgreSQL: /usr/lib/postgresql/<major>/bin.
_DEBIAN_BIN_DIR = re.compile(r"/usr/lib/postgresql/(?P<major>[1-9][0-9]*)/bin")


def _size_field(label: str, sizes: tuple[int, ...], unit: str, help_text: str) -> forms.TypedChoiceField:
    allowed = ", ".join(f"{size} {unit}" for size in sizes)
    return forms.TypedChoiceField(
        label=label,
        choices=[(size, f"{size} {unit}") for size in sizes],
        coerce=int,
        initial=8 if unit == "kB" else 1,
        help_text=help_text,
        error_messages={"invalid_choice": f"%(value)s {unit} is not allowed: PostgreSQL accepts {allowed}."},
    )


class HostField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (benchlab's own server)" if obj.is_benchlab_server else obj.name


class BuildForm(forms.Form):
    host = HostField(
        Host.objects.filter(enabled=True).order_by("name"),
        empty_label="– choose a host –",
        error_messages={"invalid_choice": "Choose one of the enabled hosts listed; that one is not among them."},
    )
    source_kind = forms.ChoiceField(
        label="Source",
        choices=BuildSourceKind.choices,
        initial=BuildSourceKind.DEBIAN,
        widget=forms.RadioSelect,
        error_messages={"invalid_choice": "Choose the Debian source package or a source tarball, not %(value)s."},
    )
    package = forms.CharField(
        label="Source package",
        required=False,
        max_length=100,
        help_text="postgresql-<major>, e.g. postgresql-15. apt fetches its source for the installed version.",
        widget=forms.TextInput(attrs={"placeholder": "postgresql-15", "list": "package-suggestions"}),
    )
    package_version = forms.CharField(
        label="Package version",
        required=False,
        max_length=100,
        help_text="The Debian version installed on the host, as dpkg-query -W postgresql-15 prints it.",
        widget=forms.TextInput(attrs={"placeholder": "15.20-0+deb12u1"}),
    )
    tarball_path = forms.CharField(
        label="Tarball",
        required=False,
        max_length=255,
        # The directory is the setting's: said in __init__.
        widget=forms.TextInput(attrs={"placeholder": "postgresql-15.20.tar.bz2"}),
    )
    sha256 = forms.CharField(
        label="SHA-256",
        required=False,
        max_length=64,
        help_text="The checksum published with the release (optional): the build stops if the tarball differs.",
    )
    version = forms.CharField(
        label="PostgreSQL version",
        required=False,
        max_length=20,
        help_text="Upstream's, e.g. 15.20. For a Debian package it may be left empty: it is the package's.",
        widget=forms.TextInput(attrs={"placeholder": "15.20", "list": "version-suggestions"}),
    )
    block_size_kb = _size_field(
        "Block size (page size)", BLOCK_SIZES_KB, "kB", "--with-blocksize: the size of a table or index page."
    )
    wal_block_size_kb = _size_field("WAL block size", WAL_BLOCK_SIZES_KB, "kB", "--with-wal-blocksize.")
    segment_size_gb = _size_field(
        "Segment size", SEGMENT_SIZES_GB, "GB", "--with-segsize: how large a table's files grow before a new one."
    )
    configure_flags = forms.MultipleChoiceField(
        label="Configure flags",
        required=False,
        choices=[(flag, flag) for flag in CONFIGURE_FLAGS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "invalid_choice": f"%(value)s is not a flag benchlab allows; allowed: {', '.join(CONFIGURE_FLAGS)}."
        },
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tarball_path"].help_text = (
            f"The file name of an upstream release tarball (.tar.gz, .tar.bz2 or .tar.xz) in {settings.PG_TARBALL_DIR} "
            "on the host: builds take tarballs only from there."
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        from_package = not data.get("version") and data.get("source_kind") == BuildSourceKind.DEBIAN
        if from_package:  # the package's own version, when it is one
            data["version"] = debian_upstream_version(data.get("package_version") or "") or ""
        if "source_kind" in self.errors:
            return data
        for field, message in build_option_errors(self.options(data)).items():
            if field == "version" and from_package and not data["version"]:
                continue  # left empty for the package's version, which is wrong: said there
            name = field if field in self.fields else "source_kind" if field == "source" else None
            if name is None or name not in self.errors:  # its own parser has said what is wrong with it
                self.add_error(name, _beside(self.fields[name].label if name else None, message))
        return data

    def options(self, data: dict[str, Any] | None = None) -> BuildOptions:
        """The lab layer's options from the cleaned data (defaults where a field was refused)."""
        data = self.cleaned_data if data is None else data
        source = BuildSource(
            kind=SourceKind(data.get("source_kind") or SourceKind.DEBIAN),
            package=data.get("package", ""),
            package_version=data.get("package_version", ""),
            tarball_path=data.get("tarball_path", ""),
            sha256=data.get("sha256", ""),
            tarball_dir=settings.PG_TARBALL_DIR,
        )
        return BuildOptions(
            version=data.get("version", ""),
            source=source,
            block_size_kb=data.get("block_size_kb", 8),
            wal_block_size_kb=data.get("wal_block_size_kb", 8),
            segment_size_gb=data.get("segment_size_gb", 1),
            configure_flags=tuple(sorted(set(data.get("configure_flags") or []))),
        )

    def flag_rows(self) -> list[tuple[Any, str]]:
        """Each configure flag's checkbox with what the flag does, for the page."""
        return [(box, CONFIGURE_FLAGS[str(box.data["value"])]) for box in self["configure_flags"]]


def _beside(label: object, message: str) -> str:
    """The lab layer's message shown beside its field: without the field's name when it starts
    with it ("tarball path /x.zip: ..." under "tarball path" reads "/x.zip: ..."), as a sentence."""
    name = f"{label} ".lower() if label else None
    if name and message.lower().startswith(name):
        message = message[len(name) :]
    return f"{message[:1].upper()}{message[1:]}."


@dataclass(frozen=True)
class InstalledPostgres:
    """A packaged PostgreSQL the probe found on a host: what a Debian source build starts from."""

    host: str
    package: str
    version: str
    bin_dir: str


def installed_packages(hosts: QuerySet[Host]) -> list[InstalledPostgres]:
    """Debian's PostgreSQL installs the probe found on these hosts (/usr/lib/postgresql/N/bin):
    the package each comes from, and its upstream version (the probe does not read the Debian
    revision: the form asks for it)."""
    installs = PgInstall.objects.filter(host__in=hosts, removed_at__isnull=True).select_related("host")
    found = []
    for install in installs.order_by("host__name", "bin_dir"):
        if match := _DEBIAN_BIN_DIR.fullmatch(install.bin_dir):
            found.append(
                InstalledPostgres(install.host.name, f"postgresql-{match['major']}", install.version, install.bin_dir)
            )
    return found
