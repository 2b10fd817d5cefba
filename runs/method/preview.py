"""A campaign preview's method warnings: each check that warns for some configurations, once,
with their numbers (as the preview's matrix numbers them) and the first one's figures.

Branch-row contention is left to the preview's own box (templates/runs/campaign_form.html),
which lists every configuration with its scale and clients.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.timesince import timesince

from runs.bench.specs import RunSpec
from runs.method.comparison_checks import STORAGE_FIELDS
from runs.method.facts import spec_facts
from runs.method.run_checks import run_checks

OWN_BOX = frozenset({"contention"})


@dataclass(frozen=True)
class PreviewWarning:
    key: str
    title: str
    numbers: tuple[int, ...]  # the configurations it warns for, from 1
    reason: str  # the first of them's
    advice: str

    @property
    def configurations(self) -> str:
        """ "#1, #3-#5 and #9" (with an en dash): runs of consecutive numbers as ranges."""
        spans: list[list[int]] = []
        for number in self.numbers:
            if spans and number == spans[-1][-1] + 1:
                spans[-1].append(number)
            else:
                spans.append([number])
        named = [f"#{span[0]}" if len(span) == 1 else f"#{span[0]}–#{span[-1]}" for span in spans]
        return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


PROBE, RUN = "probe", "run"


@dataclass(frozen=True)
class HostAsRead:
    """One host of a campaign as last read: by a probe (or "Check the hosts now"), by a run, or never."""

    name: str
    source: str  # PROBE, RUN, or "" when neither has read its CPU settings and load
    at: datetime | None = None
    run_id: int | None = None  # the run that read it
    found: tuple[str, ...] = ()  # what on it is set against stable numbers

    @property
    def when(self) -> str:
        """ "probed 3 minutes ago", "by its run 12, 2 hours ago", or "never probed nor run"."""
        if not self.source or self.at is None:
            return "never probed nor run"
        age = timezone.now() - self.at
        if abs(age) < timedelta(minutes=1):  # a clock a little ahead of this one's too
            ago = "less than a minute ago"
        elif age < timedelta(0):
            ago = f"at {self.at:%Y-%m-%d %H:%M} UTC"
        else:
            ago = f"{timesince(self.at, depth=1)} ago"
        return f"probed {ago}" if self.source == PROBE else f"by its run {self.run_id}, {ago}"

    @property
    def said(self) -> str:
        """ "lab1: CPU frequency governor powersave (probed 3 minutes ago)" """
        if not self.source:
            return f"{self.name}: never probed nor run: its CPU settings and load are not known"
        return f"{self.name}: {'; '.join(self.found)} ({self.when})"


def preview_warnings(
    specs: Mapping[int, RunSpec], memory: Mapping[int, int | None], hosts: Mapping[int, HostAsRead] | None = None
) -> list[PreviewWarning]:
    """For the runnable configurations (number -> spec), their servers' RAM (host id -> bytes) and
    their server and client hosts as last read (host id -> HostAsRead)."""
    found: dict[str, list[tuple[int, str, str, str]]] = {}
    for number, spec in specs.items():
        for check in run_checks(spec_facts(spec, memory.get(spec.server_host_id))):
            if check.warns and check.key not in OWN_BOX:
                found.setdefault(check.key, []).append((number, check.title, check.reason, check.advice))
    warnings = [
        PreviewWarning(key, rows[0][1], tuple(row[0] for row in rows), rows[0][2], rows[0][3])
        for key, rows in found.items()
    ]
    return _storage_said(warnings, list(specs.values())) + _hosts_said(specs, hosts or {})


def _hosts_said(specs: Mapping[int, RunSpec], hosts: Mapping[int, HostAsRead]) -> list[PreviewWarning]:
    """The checklist before a campaign: a host set against stable numbers, or never read, with the
    configurations it serves or drives."""
    warnings = []
    for host_id, host in hosts.items():
        numbers = tuple(
            number
            for number, spec in specs.items()
            if spec.server_host_id == host_id or host_id in spec.client_host_ids
        )
        if not numbers or (host.source and not host.found):
            continue
        advice = (
            "set the performance governor, turn boost off and keep the host otherwise idle"
            if host.source
            else "press “Check the hosts now” to read it before queueing"
        )
        warnings.append(PreviewWarning(f"host-{host_id}", "The host as last read", numbers, host.said, advice))
    return warnings


def _storage_said(warnings: list[PreviewWarning], specs: Sequence[RunSpec]) -> list[PreviewWarning]:
    """A memory warning in a campaign that varies the storage says what that means for it."""
    varied = {name for spec in specs[1:] for name in specs[0].differences(spec)} if specs else set()
    if not varied & STORAGE_FIELDS:
        return warnings
    said = "this campaign compares storage, and these configurations fit in memory: it would mostly measure the CPU"
    return [
        PreviewWarning(w.key, w.title, w.numbers, f"{said} ({w.reason})", w.advice) if w.key == "memory" else w
        for w in warnings
    ]
