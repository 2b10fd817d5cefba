"""The parsers against real captured output (runs/tests/fixtures/README.md says where each file comes from).

Expected values were read off the fixture text by eye.
"""

from datetime import UTC, datetime

import pytest

from runs.lab.parse.sysstat import (
    IostatSample,
    IostatStream,
    VmstatStream,
    parse_iostat,
    parse_vmstat,
)
from runs.tests.captured import captured

# --- iostat --------------------------------------------------------------------------------------


def test_it_parses_iostat_dxyt_with_iso_times() -> None:
    samples = parse_iostat(captured("sysstat/iostat_dxyt_vda.txt"))

    assert [s.timestamp for s in samples] == [
        datetime(2026, 11, 22, 2, 8, second, tzinfo=UTC) for second in (28, 29, 30)
    ]
    assert samples[0] == IostatSample(
        timestamp=datetime(2026, 11, 22, 2, 8, 28, tzinfo=UTC),
        device="vda",
        r_per_s=2.00,
        w_per_s=4627.00,
        rkb_per_s=88.00,
        wkb_per_s=19940.00,
        r_await_ms=0.00,
        w_await_ms=0.04,
        aqu_sz=0.26,
        util_pct=20.00,
    )
    assert (samples[2].w_per_s, samples[2].util_pct) == (4362.00, 14.40)


def test_it_parses_every_device_of_each_iostat_report() -> None:
    samples = parse_iostat(captured("sysstat/iostat_dxyt_all.txt"))

    assert [(s.device, s.timestamp and s.timestamp.second) for s in samples] == [
        ("loop0", 28),
        ("vda", 28),
        ("loop0", 29),
        ("vda", 29),
    ]
    assert (samples[0].r_await_ms, samples[0].util_pct) == (7.00, 0.40)


def test_it_reads_iostat_locale_times_as_naive() -> None:
    samples = parse_iostat(captured("sysstat/iostat_dxyt_vda_default_time.txt"))

    assert [s.timestamp for s in samples] == [datetime(2026, 11, 22, 2, 8, 30), datetime(2026, 11, 22, 2, 8, 31)]
    assert samples[1].wkb_per_s == 212.00


def test_it_converts_iostat_megabytes_to_kilobytes() -> None:
    samples = parse_iostat(captured("sysstat/iostat_dxymt_vda_megabytes.txt"))

    assert [s.wkb_per_s for s in samples] == [pytest.approx(0.06 * 1024), pytest.approx(0.07 * 1024)]
    assert samples[0].w_per_s == 14.00


def test_it_maps_columns_of_an_older_sysstat_by_name() -> None:
    samples = parse_iostat(captured("sysstat/iostat_xz_sysstat10_netflix2015.txt"))

    assert [s.device for s in samples] == ["xvda", "xvdb", "xvdc", "dm-0", "dm-1", "dm-2"]
    assert samples[4] == IostatSample(
        timestamp=None,
        device="dm-1",
        r_per_s=0.00,
        w_per_s=0.94,
        rkb_per_s=0.01,
        wkb_per_s=3.78,
        r_await_ms=0.04,
        w_await_ms=346.81,
        aqu_sz=0.33,  # the column was called avgqu-sz
        util_pct=0.00,
    )


def test_it_streams_iostat_a_line_at_a_time() -> None:
    lines = captured("sysstat/iostat_dxyt_all.txt").splitlines()
    stream = IostatStream()

    fed = [stream.feed(line) for line in lines]

    assert [len(samples) for samples in fed] == [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]
    assert [s for samples in fed for s in samples] == parse_iostat("\n".join(lines))


# --- vmstat --------------------------------------------------------------------------------------


def test_it_parses_vmstat_nt_and_drops_the_since_boot_row() -> None:
    samples = parse_vmstat(captured("sysstat/vmstat_nt.txt"))

    assert len(samples) == 2
    first = samples[0]
    assert first.timestamp == datetime(2026, 11, 22, 2, 8, 28, tzinfo=UTC)
    assert (first.r, first.b, first.free, first.buff, first.cache) == (3, 0, 21507204, 110720, 2805876)
    assert (first.bi, first.bo, first.in_, first.cs) == (92, 19960, 21382, 53367)
    assert (first.us, first.sy, first.id, first.wa, first.st) == (55, 28, 11, 6, 0)
    assert first.gu is None
    assert samples[1].st == 1


def test_it_can_keep_the_since_boot_row() -> None:
    samples = parse_vmstat(captured("sysstat/vmstat_nt.txt"), skip_since_boot=False)

    assert [s.r for s in samples] == [7, 3, 4]
    assert (samples[0].us, samples[0].id) == (21, 74)


def test_it_leaves_vmstat_times_naive_outside_utc() -> None:
    samples = parse_vmstat(captured("sysstat/vmstat_nt_tz_paris.txt"))

    assert [s.timestamp for s in samples] == [datetime(2026, 11, 22, 3, 12, 15)]
    assert samples[0].in_ == 1555


def test_it_streams_vmstat_a_line_at_a_time() -> None:
    stream = VmstatStream()

    fed = [stream.feed(line) for line in captured("sysstat/vmstat_nt.txt").splitlines()]

    assert [len(samples) for samples in fed] == [0, 0, 0, 1, 1]
    assert [s for samples in fed for s in samples] == parse_vmstat(captured("sysstat/vmstat_nt.txt"))
