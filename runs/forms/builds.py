"""The form that asks for a PostgreSQL build (page and API alike): a host, one of the sources that
host has (runs.builds.services.sources), page sizes and configure flags, each checked by the lab
layer's own rules (pg_build_options), so the page, the API and the service refuse exactly the
same things with the same words."""

from collections.abc import Sequence
from typing import Any

from django import forms
from django.conf import settings
from django.http import HttpRequest

from runs.builds.services.builds import build_queue
from runs.builds.services.sources import SourcesUnknown, host_sources_for_page, sources_text
from runs.lab.pgbuild.options import (
    BLOCK_SIZES_KB,
    CONFIGURE_FLAGS,
    SEGMENT_SIZES_GB,
    WAL_BLOCK_SIZES_KB,
    BuildOptions,
    SourceKind,
    build_option_errors,
)
from runs.lab.pgbuild.sources import HostSource
from runs.models import Host, PgBuild


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
    """A build on a host from a source it has: `sources` is what the host was found to have
    (builds.services.sources), `sources_problem` why it could not be asked. The PostgreSQL
    version is the source's; nothing about the source is typed."""

    # templates/runs/build_form.html draws these itself: its error summary links there.
    error_anchors = {"host": "host-choice", "source": "source"}

    host = HostField(
        Host.objects.filter(enabled=True).order_by("name"),
        empty_label="– choose a host –",
        error_messages={"invalid_choice": "Choose one of the enabled hosts listed; that one is not among them."},
    )
    source = forms.CharField(
        label="Source",
        max_length=400,
        error_messages={"required": "Choose one of the sources the host has."},
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
    # The API's: when given, they must agree with the source (a script's guard), never choose it.
    version = forms.CharField(label="PostgreSQL version", required=False, max_length=20)
    sha256 = forms.CharField(label="SHA-256", required=False, max_length=64)

    def __init__(
        self, *args: Any, sources: Sequence[HostSource] = (), sources_problem: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.sources = list(sources)
        self.sources_problem = sources_problem

    def source_chosen(self) -> HostSource | None:
        key = self.cleaned_data.get("source") if hasattr(self, "cleaned_data") else None
        return next((source for source in self.sources if source.key == key), None)

    def clean_source(self) -> str:
        key: str = self.cleaned_data["source"]
        host = self.cleaned_data.get("host")
        if host is None:
            return key  # the host's own error says what is wrong
        if self.sources_problem:
            raise forms.ValidationError(f"{self.sources_problem}; nothing was queued: try again once it answers.")
        if not any(source.key == key for source in self.sources):
            raise forms.ValidationError(
                f"{key[:100]} is not a source {host.name} has; {sources_text(host, self.sources)}. "
                "A Debian source is added to its cache with apt-get source --download-only (scripts/fetch-pg-source); "
                f"a release tarball is copied into {settings.PG_TARBALL_DIR}."
            )
        return key

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        source = self.source_chosen()
        if source is None:
            return data
        if data.get("version") and data["version"] != source.version:
            self.add_error("version", f"{source.label} is PostgreSQL {source.version}, not {data['version'][:20]}.")
        if data.get("sha256") and data["sha256"].lower() != source.sha256:
            self.add_error("sha256", f"{source.file_name} on the host has SHA-256 {source.sha256}, not the one given.")
        for field, message in build_option_errors(self.options(data)).items():
            name = field if field in self.fields else "source"
            if name not in self.errors:  # its own parser has said what is wrong with it
                self.add_error(name, _beside(self.fields[name].label, message))
        return data

    def options(self, data: dict[str, Any] | None = None) -> BuildOptions:
        """The lab layer's options from the cleaned data and the chosen source."""
        data = self.cleaned_data if data is None else data
        source = self.source_chosen()
        if source is None:
            raise ValueError("options() of a form without a valid source")
        return BuildOptions(
            version=source.version,
            source=source.build_source(settings.PG_TARBALL_DIR),
            block_size_kb=data.get("block_size_kb", 8),
            wal_block_size_kb=data.get("wal_block_size_kb", 8),
            segment_size_gb=data.get("segment_size_gb", 1),
            configure_flags=tuple(sorted(set(data.get("configure_flags") or []))),
        )

    def queue(self, by: Any, request: HttpRequest) -> tuple[PgBuild, bool]:
        """Queue the build this valid form asks for (the page's and the API's one way), or find
        the same one: build_queue's answer; its ValidationError when the host takes no builds."""
        return build_queue(
            host=self.cleaned_data["host"], options=self.options(), by=by, request=request, sources=self.sources
        )

    def flag_rows(self) -> list[tuple[Any, str]]:
        """Each configure flag's checkbox with what the flag does, for the page."""
        return [(box, CONFIGURE_FLAGS[str(box.data["value"])]) for box in self["configure_flags"]]


def sources_of(host: Host | None) -> dict[str, Any]:
    """BuildForm's sources of `host` (asked of it live), or why they could not be asked."""
    if host is None:
        return {}
    try:
        return {"sources": host_sources_for_page(host)}
    except SourcesUnknown as exc:
        return {"sources_problem": str(exc)}


def legacy_source_key(kind: str, package: str, package_version: str, tarball_path: str) -> str:
    """The source key the API's older fields name (source_kind with package and package_version,
    or with tarball_path): still accepted when the host has that source."""
    if kind == SourceKind.TARBALL:
        return f"tarball:{tarball_path}"
    return f"debian:{package}={package_version}"


def _beside(label: object, message: str) -> str:
    """The lab layer's message shown beside its field: without the field's name when it starts
    with it ("tarball path /x.zip: ..." under "tarball path" reads "/x.zip: ..."), as a sentence."""
    name = f"{label} ".lower() if label else None
    if name and message.lower().startswith(name):
        message = message[len(name) :]
    return f"{message[:1].upper()}{message[1:]}."
