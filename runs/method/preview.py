"""A campaign preview's method warnings: each check that warns for some configurations, once,
with their numbers (as the preview's matrix numbers them) and the first one's figures.

Branch-row contention is left to the preview's own box (templates/runs/campaign_form.html),
which lists every configuration with its scale and clients.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def preview_warnings(
    specs: Mapping[int, RunSpec], memory: Mapping[int, int | None], hosts_said: Mapping[int, str] | None = None
) -> list[PreviewWarning]:
    """For the runnable configurations (number -> spec), their servers' RAM (host id -> bytes) and
    what is set against stable numbers on each server as its last run found it (host id -> sentence)."""
    found: dict[str, list[tuple[int, str, str, str]]] = {}
    for number, spec in specs.items():
        for check in run_checks(spec_facts(spec, memory.get(spec.server_host_id))):
            if check.warns and check.key not in OWN_BOX:
                found.setdefault(check.key, []).append((number, check.title, check.reason, check.advice))
    warnings = [
        PreviewWarning(key, rows[0][1], tuple(row[0] for row in rows), rows[0][2], rows[0][3])
        for key, rows in found.items()
    ]
    return _storage_said(warnings, list(specs.values())) + _hosts_said(specs, hosts_said or {})


def _hosts_said(specs: Mapping[int, RunSpec], said: Mapping[int, str]) -> list[PreviewWarning]:
    """The checklist before a campaign: a host set against stable numbers, with its configurations."""
    warnings = []
    for host_id, sentence in said.items():
        numbers = tuple(number for number, spec in specs.items() if spec.server_host_id == host_id)
        if numbers:
            advice = "set the performance governor, turn boost off and keep the host otherwise idle"
            warnings.append(PreviewWarning(f"host-{host_id}", "The host as last measured", numbers, sentence, advice))
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
