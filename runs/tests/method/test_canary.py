"""The fio canary's comparison and Method check on hand-made figures (runs.method.canary)."""

from typing import Any

import pytest

from runs.method.canary import FAST_FACTOR, SLOW_FACTOR, CanaryStatus, DeviceCanary, canary_check, compare_canary
from runs.method.outcome import Status
from runs.models import BaselineRole, BaselineState, DeviceBaseline

JOBS = ["seq-write", "rand-read-qd1", "rand-write-qd1"]


def direction(iops: float, lat_ms: float, bs_kib: int = 4) -> dict[str, Any]:
    return {"iops": iops, "bw_mb_s": iops * bs_kib * 1024 / 1e6, "lat_mean_ms": lat_ms, "lat_p50_ms": lat_ms,
            "lat_p99_ms": 3 * lat_ms}  # fmt: skip


def canary(role: BaselineRole, read_iops: float = 185.0, read_lat: float = 5.4, state: str = "done",
           error: str = "") -> DeviceBaseline:  # fmt: skip
    """An unsaved canary whose random reads did `read_iops` at `read_lat` ms (writes and the
    sequential write as a slow disk does them)."""
    results = {} if state != BaselineState.DONE else {
        "seq-write": {"read": None, "write": direction(40.0, 25.0, bs_kib=1024)},
        "rand-read-qd1": {"read": direction(read_iops, read_lat), "write": None},
        "rand-write-qd1": {"read": None, "write": direction(170.0, 5.9)},
    }  # fmt: skip
    return DeviceBaseline(role=role, state=state, jobs=JOBS, results=results, error=error)


def device(before: DeviceBaseline | None, after: DeviceBaseline | None) -> DeviceCanary:
    return compare_canary("lab1:hdd", 7, before, after)


def test_a_slow_device_s_margin_is_a_quarter_either_way_and_a_fast_one_s_a_factor_of_three() -> None:
    # The HDD-like canary reads at 5.4 ms (slow): x1.25 either way. 185 * 1.25 = 231.25, 185 / 1.25 = 148:
    # 231 and 148.5 are within, 232 and 147 beyond.
    assert SLOW_FACTOR == 1.25 and FAST_FACTOR == 3.0
    at_the_edge = [device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, iops, 5.4))
                   for iops in (231.0, 148.5, 232.0, 147.0)]  # fmt: skip
    assert [d.factor for d in at_the_edge] == [1.25] * 4 and at_the_edge[0].margin == "×1.25 either way (−20 % / +25 %)"
    assert [d.status for d in at_the_edge] == ["unchanged", "unchanged", "changed", "changed"]
    # A RAM disk's canary reads at 0.02 ms (fast): x3. 50 000 -> 20 000 is within, 16 000 is not.
    fast = [device(canary(BaselineRole.CANARY_BEFORE, 50000.0, 0.02), canary(BaselineRole.CANARY_AFTER, iops, 0.02))
            for iops in (20000.0, 149000.0, 16000.0, 151000.0)]  # fmt: skip
    assert [d.factor for d in fast] == [3.0] * 4
    assert [d.status for d in fast] == ["unchanged", "unchanged", "changed", "changed"]


def test_the_same_device_within_the_margin_is_unchanged_and_the_check_passes() -> None:
    # 185 -> 203.5 IOPS is +10.0 %; 5.4 -> 4.86 ms is -10.0 %.
    unchanged = device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, 203.5, 4.86))
    assert unchanged.status == CanaryStatus.UNCHANGED and unchanged.changes == []
    iops = next(f for f in unchanged.figures if f.job == "rand-read-qd1" and f.figure == "iops")
    assert iops.change_pct == pytest.approx(10.0) and iops.change_text == "+10 %" and not iops.changed
    # 3 jobs of one direction each, 3 figures each; fio's percentiles (bins) are not compared.
    assert len(unchanged.figures) == 9 and {f.figure for f in unchanged.figures} == {"iops", "bw_mb_s", "lat_mean_ms"}

    check = canary_check([unchanged], asked=True, cancelled=False)
    assert check.status == Status.PASSED and check.key == "canary"
    assert check.reason.startswith("1 device unchanged: every figure after within ×1.25 either way (−20 % / +25 %)")
    # The largest as a ratio: 1 / 0.9 = x1.11 for the latency beats x1.10 for the IOPS.
    assert check.reason.endswith("(the largest change: rand-read-qd1 mean latency 5.4 → 4.86 ms (−10 %))")


def test_a_device_whose_random_reads_slowed_beyond_the_margin_is_changed_and_warns() -> None:
    # 185 -> 120.25 IOPS is -35 %; 5.4 -> 8.1 ms is +50 %.
    changed = device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, 120.25, 8.1))
    assert changed.status == CanaryStatus.CHANGED
    assert {(f.job, f.figure) for f in changed.changes} == {
        ("rand-read-qd1", "iops"), ("rand-read-qd1", "bw_mb_s"), ("rand-read-qd1", "lat_mean_ms")}  # fmt: skip
    assert all(f.worse for f in changed.changes)

    check = canary_check([changed], asked=True, cancelled=False)
    assert check.status == Status.WARNING and check.warns
    assert "lab1:hdd (beyond ×1.25 either way (−20 % / +25 %)): rand-read-qd1 IOPS 185 → 120 (−35 %)" in check.reason
    assert "rand-read-qd1 mean latency 5.4 → 8.1 ms (+50 %)" in check.reason and check.advice


def test_a_faster_device_after_is_a_change_too() -> None:
    faster = device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, 400.0, 2.5))
    assert faster.status == CanaryStatus.CHANGED and not any(f.worse for f in faster.changes)


def test_no_canary_after_yet_is_not_recorded() -> None:
    waiting = device(canary(BaselineRole.CANARY_BEFORE), None)
    assert waiting.status == CanaryStatus.WAITING
    assert all(f.after is None and f.change_pct is None and not f.changed for f in waiting.figures)
    check = canary_check([waiting], asked=True, cancelled=False)
    assert (check.status, check.reason) == (Status.NOT_RECORDED, "the canaries after the campaign have not run yet")
    running = device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, state="running"))
    assert running.status == CanaryStatus.WAITING


def test_a_failed_canary_is_not_recorded_with_its_error() -> None:
    failed = device(
        canary(BaselineRole.CANARY_BEFORE),
        canary(BaselineRole.CANARY_AFTER, state="failed", error="fio exited with status 1\nmore"),
    )
    assert failed.status == CanaryStatus.FAILED
    check = canary_check([failed], asked=True, cancelled=False)
    assert check.status == Status.NOT_RECORDED
    assert check.reason == "lab1:hdd: its canary after the campaign failed: fio exited with status 1"


def test_a_changed_device_warns_even_when_another_device_s_canary_failed() -> None:
    changed = device(canary(BaselineRole.CANARY_BEFORE), canary(BaselineRole.CANARY_AFTER, 100.0, 5.4))
    failed = compare_canary("lab1:ssd", 8, canary(BaselineRole.CANARY_BEFORE, state="failed"), None)
    assert canary_check([failed, changed], asked=True, cancelled=False).status == Status.WARNING


def test_a_cancelled_campaign_or_one_without_the_option_is_not_applicable() -> None:
    before_only = device(canary(BaselineRole.CANARY_BEFORE), None)
    cancelled = canary_check([before_only], asked=True, cancelled=True)
    assert (cancelled.status, cancelled.reason) == (
        Status.NOT_APPLICABLE, "the campaign was cancelled: no canary after it")  # fmt: skip
    assert canary_check([], asked=False, cancelled=False).status == Status.NOT_APPLICABLE
    assert canary_check([], asked=True, cancelled=False).status == Status.NOT_RECORDED
