"""A campaign's fio canary: each device measured briefly before the campaign and again after it,
the two compared figure by figure. A device whose figures moved beyond what this short job
moves by itself changed during the campaign (a drive degrading, a cache filling, a neighbour,
firmware), and the campaign's later runs measured another device than its first. Pure: the
canaries' rows in (DeviceBaseline, results as runs/models/baselines.py describes them), the
comparison and the Method check out.

The margin was measured, not guessed: the canary's three jobs (CANARY_SETTINGS) run 7 times in a row
on each disk of the virtual lab, with mkfs.ext4 before the sixth as a campaign leaves it, while other
test sessions loaded this 2-core machine (27 Nov 2026). The largest ratio between any two repeats:
- the FUSE-delayed "HDD" (5 ms a request): x1.09 (seq-write 89.4-97.4 MB/s), random 4k QD1
  184.9-190.5 IOPS (x1.03), mean latency 5.24-5.39 ms (x1.03);
- the plain loop device on the VM's disk: x1.85 (random write QD1 19 134-35 407 IOPS), mean latency
  x1.85, seq-write x1.67, p50 latency x2.2;
- the RAM loop device: x2.4 (random read QD1 18 819-44 951 IOPS, mean latency 0.022-0.052 ms).
A device answering in microseconds measures this machine's CPU and scheduler as much as itself, one
answering in milliseconds repeats within 10 %. So the margin follows the device: a figure changed when
after / before is beyond x1.25 either way on a device whose canary before read at 1 ms or slower
(2.8 times the worst spread seen there), beyond x3 on a faster one (the worst seen, x2.4, with room).
p50 and p99 are not compared: fio's percentiles are bins (p50 alone moved x2.2 on the plain loop).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runs.method.outcome import Check, Status
from runs.models import BaselineState, DeviceBaseline

CHECK_KEY = "canary"
CHECK_TITLE = "fio canary"

# (figure of a direction's results, label, unit, higher is better)
FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("iops", "IOPS", "", True),
    ("bw_mb_s", "bandwidth", "MB/s", True),
    ("lat_mean_ms", "mean latency", "ms", False),
)
# The margins (the module's docstring says how they were measured): after / before beyond this
# factor either way is a change.
SLOW_FACTOR = 1.25
FAST_FACTOR = 3.0
SLOW_DEVICE_MS = 1.0  # the before canary's mean QD1 random read latency from which a device is slow
SLOW_JOB = "rand-read-qd1"


def margin_text(factor: float) -> str:
    """ "x1.25 either way (-20 % / +25 %)"."""
    return f"×{factor:g} either way (−{100 * (1 - 1 / factor):.0f} % / +{100 * (factor - 1):.0f} %)"


@dataclass(frozen=True)
class FigureChange:
    job: str  # the fio job, e.g. "rand-read-qd1"
    direction: str  # "read" or "write"
    figure: str  # a key of the direction's results, e.g. "iops"
    label: str
    unit: str
    higher_is_better: bool
    before: float | None
    after: float | None
    factor: float  # the margin: after / before beyond it either way is a change

    @property
    def change_pct(self) -> float | None:
        """After against before, in % of before; None when either is missing (or before is 0)."""
        if self.before is None or self.after is None or self.before == 0:
            return None
        return 100.0 * (self.after - self.before) / self.before

    @property
    def changed(self) -> bool:
        if self.before is None or self.after is None or self.before <= 0 or self.after <= 0:
            return False
        ratio = self.after / self.before
        return ratio > self.factor or ratio < 1 / self.factor

    @property
    def worse(self) -> bool:
        """The change makes the device slower (fewer IOPS, or a longer latency)."""
        change = self.change_pct or 0.0
        return change < 0 if self.higher_is_better else change > 0

    @property
    def change_text(self) -> str:
        """ "+4.2 %", "+35 %" (a minus sign for a fall), or a dash with nothing to compare."""
        change = self.change_pct
        if change is None:
            return "–"
        sign = "+" if change >= 0 else "−"
        return f"{sign}{abs(change):.0f} %" if abs(change) >= 10 else f"{sign}{abs(change):.1f} %"

    @property
    def before_text(self) -> str:
        return _number(self.before)

    @property
    def after_text(self) -> str:
        return _number(self.after)

    def describe(self) -> str:
        """ "rand-read-qd1 IOPS 185 → 250 (+35 %)", "rand-read-qd1 mean latency 5.4 → 4.1 ms (-24 %)"."""
        moved = f" ({self.change_text})" if self.change_pct is not None else ""
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.job} {self.label} {_number(self.before)} → {_number(self.after)}{unit}{moved}"


class CanaryStatus:
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    WAITING = "waiting"  # a canary not yet ended (or the after one not yet queued)
    FAILED = "failed"  # a canary failed or was cancelled: nothing to compare
    MISSING = "missing"  # no canary where one was expected


@dataclass(frozen=True)
class DeviceCanary:
    device: str  # as the inventory names it, e.g. "lab1:hdd"
    device_id: int
    before: DeviceBaseline | None
    after: DeviceBaseline | None
    figures: tuple[FigureChange, ...]
    factor: float = FAST_FACTOR

    @property
    def margin(self) -> str:
        return margin_text(self.factor)

    @property
    def changes(self) -> list[FigureChange]:
        return [figure for figure in self.figures if figure.changed]

    @property
    def status(self) -> str:
        ends = [self.before, self.after]
        if any(end is not None and end.state in (BaselineState.FAILED, BaselineState.CANCELLED) for end in ends):
            return CanaryStatus.FAILED
        if self.before is None:
            return CanaryStatus.MISSING
        if any(end is None or not end.is_finished for end in ends):
            return CanaryStatus.WAITING
        if not any(figure.change_pct is not None for figure in self.figures):
            return CanaryStatus.MISSING  # done, yet no figure in common (not the same jobs)
        return CanaryStatus.CHANGED if self.changes else CanaryStatus.UNCHANGED

    @property
    def why(self) -> str:
        """What the status rests on, in one line."""
        for when, end in (("before", self.before), ("after", self.after)):
            if end is not None and end.state in (BaselineState.FAILED, BaselineState.CANCELLED):
                error = f": {end.error.splitlines()[0]}" if end.error.strip() else ""
                return f"its canary {when} the campaign {end.get_state_display()}{error}"
        if self.status == CanaryStatus.CHANGED:
            return "; ".join(figure.describe() for figure in self.changes)
        return ""


def compare_canary(
    device: str, device_id: int, before: DeviceBaseline | None, after: DeviceBaseline | None
) -> DeviceCanary:
    """Every figure of every job and direction the before canary measured, beside the after's."""
    read = _value(_direction(before, SLOW_JOB, "read"), "lat_mean_ms")
    factor = SLOW_FACTOR if read is not None and read >= SLOW_DEVICE_MS else FAST_FACTOR
    figures = []
    jobs = list((before.jobs if before is not None else None) or (after.jobs if after is not None else []))
    for job in jobs:
        for direction in ("read", "write"):
            measured = [_direction(end, job, direction) for end in (before, after)]
            if not any(measured):
                continue
            for figure, label, unit, higher in FIGURES:
                values = [_value(side, figure) for side in measured]
                figures.append(FigureChange(job, direction, figure, label, unit, higher, values[0], values[1], factor))
    return DeviceCanary(device, device_id, before, after, tuple(figures), factor)


def _direction(end: DeviceBaseline | None, job: str, direction: str) -> dict[str, Any] | None:
    if end is None or end.state != BaselineState.DONE:
        return None
    return (end.results.get(job) or {}).get(direction) or None


def _value(measured: dict[str, Any] | None, figure: str) -> float | None:
    value = (measured or {}).get(figure)
    return float(value) if value is not None else None


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def canary_check(devices: Sequence[DeviceCanary], *, asked: bool, cancelled: bool) -> Check:
    """The campaign's Method check: passed when every device's canary after is within the margin
    of its canary before, a warning naming each device that changed."""
    if not asked and not devices:
        return Check(CHECK_KEY, CHECK_TITLE, Status.NOT_APPLICABLE, "the campaign asked for no fio canary")
    if cancelled and not any(device.after is not None for device in devices):
        return Check(CHECK_KEY, CHECK_TITLE, Status.NOT_APPLICABLE, "the campaign was cancelled: no canary after it")
    changed = [device for device in devices if device.status == CanaryStatus.CHANGED]
    if changed:
        named = "; ".join(f"{device.device} (beyond {device.margin}): {device.why}" for device in changed)
        return Check(
            CHECK_KEY,
            CHECK_TITLE,
            Status.WARNING,
            f"changed during the campaign: {named}",
            "find out what changed on the device (dmesg, SMART, what else used it) before trusting the later runs; "
            "compare the first and last repetitions",
        )
    failed = [device for device in devices if device.status == CanaryStatus.FAILED]
    if failed:
        named = "; ".join(f"{device.device}: {device.why}" for device in failed)
        return Check(CHECK_KEY, CHECK_TITLE, Status.NOT_RECORDED, named)
    if not devices or any(device.status == CanaryStatus.WAITING for device in devices):
        return Check(CHECK_KEY, CHECK_TITLE, Status.NOT_RECORDED, "the canaries after the campaign have not run yet")
    missing = [device.device for device in devices if device.status == CanaryStatus.MISSING]
    if missing:
        return Check(CHECK_KEY, CHECK_TITLE, Status.NOT_RECORDED, f"no canary to compare on {', '.join(missing)}")
    largest = max(
        (figure for device in devices for figure in device.figures if figure.change_pct is not None),
        key=lambda figure: abs(math.log(figure.after / figure.before)) if figure.after and figure.before else 0.0,
    )
    margins = " or ".join(sorted({device.margin for device in devices}))
    return Check(
        CHECK_KEY,
        CHECK_TITLE,
        Status.PASSED,
        f"{len(devices)} device{'s' if len(devices) != 1 else ''} unchanged: every figure after within {margins} "
        f"of before (the largest change: {largest.describe()})",
    )
