"""The strict reader of uploaded pgbench output, on real output of pgbench 12 to 17
(runs/tests/imports/data, README there), and on the same files garbled or cut short: every
refusal names the file and the line. Figures are read off the files by hand (the p50 etc. by
`sort -n` of the logs' third column: 300 lines, ranks 150, 285, 297)."""

import pytest

from runs.imports.parse import MAX_FILE_BYTES, ImportFileError, UploadedText, decode_upload
from runs.imports.reading import read_pgbench_output
from runs.tests.imports.files import DATA, VERSIONS, captured, reports, thread_logs

# version: tps (without connections), transactions, latency avg, last progress second's tps, pgbench banner (14+)
SUMMARIES = {
    12: (786.049894, 2360, 2.537, 882.0, None),
    13: (512.338163, 1535, 3.887, 454.0, None),
    14: (710.216882, 2136, 2.804, 732.7, "14.23, server 15.20 (Debian 15.20-0+deb12u1)"),
    15: (470.290217, 1408, 4.242, 546.0, "15.20 (Debian 15.20-0+deb12u1)"),
    16: (1154.223239, 3460, 1.726, 1347.9, "16.2, server 15.20 (Debian 15.20-0+deb12u1)"),
    17: (1127.008182, 3377, 1.768, 1154.8, "17.10, server 15.20 (Debian 15.20-0+deb12u1)"),
}
# version: p50, p95, p99, min, max (ms) of the per-transaction logs' 300 lines
PERCENTILES = {
    12: (2.125, 6.587, 9.587, 0.333, 12.479),
    13: (5.005, 11.487, 14.990, 1.045, 17.905),
    14: (0.774, 8.258, 29.696, 0.302, 45.670),
    15: (3.491, 9.733, 11.314, 0.859, 12.691),
    16: (1.876, 4.017, 5.934, 1.020, 7.345),
    17: (1.887, 4.669, 6.455, 0.841, 8.780),
}
# version: the first interval's transactions, both threads' lines added; its column count
AGGREGATE = {12: (1222, 6), 13: (125, 6), 14: (312, 6), 15: (137, 15), 16: (96, 15), 17: (0, 15)}


@pytest.mark.parametrize("version", VERSIONS)
def test_it_reads_each_pgbench_versions_summary_and_progress(version: int) -> None:
    tps, processed, latency, last_tps, banner = SUMMARIES[version]
    output = read_pgbench_output(reports(version, "tx"))
    assert output.tps == tps and output.summary is not None
    assert output.summary.transactions_processed == processed and output.latency_avg_ms == latency
    assert (output.summary.clients, output.summary.threads, output.summary.scaling_factor) == (2, 2, 1)
    assert output.duration_s == 3 and output.pgbench_version == banner
    assert [second for second, _ in output.samples] == [1, 2, 3] and output.samples[-1][1].tps == last_tps
    # pgbench 15+ prints failures; 12 to 14 have no such field
    assert (output.summary.failed is None) == (version < 15)
    assert (output.samples[0][1].failed is None) == (version < 15)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_reads_the_percentiles_from_every_threads_transaction_log(version: int) -> None:
    output = read_pgbench_output(reports(version, "tx"), transaction_logs=thread_logs(version, "tx"))
    latency = output.latency
    assert latency is not None and latency.count == 300 and (latency.skipped, latency.failed) == (0, 0)
    assert (latency.p50_ms, latency.p95_ms, latency.p99_ms, latency.min_ms, latency.max_ms) == PERCENTILES[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_merges_the_threads_aggregate_logs(version: int) -> None:
    first_count, columns = AGGREGATE[version]
    logs = thread_logs(version, "agg")
    output = read_pgbench_output(reports(version, "agg"), aggregate_logs=logs)
    assert len(output.aggregate) == 3 and output.aggregate[0].count == first_count
    assert len(logs[0].text.split("\n")[0].split()) == columns
    assert (output.aggregate[0].retried is None) == (version < 15)


def test_one_file_with_stdout_and_stderr_together_is_read_as_both() -> None:
    both = UploadedText("out.txt", captured(17, "tx", "progress.txt").text + captured(17, "tx", "summary.txt").text)
    output = read_pgbench_output([both])
    assert output.tps == 1127.008182 and len(output.samples) == 3


def test_progress_alone_gives_the_mean_of_its_seconds() -> None:
    output = read_pgbench_output([captured(13, "tx", "progress.txt")])
    assert output.summary is None and output.duration_s == 3
    assert output.tps == pytest.approx((444.9 + 634.0 + 454.0) / 3)


def refusal(*args: object, **kwargs: object) -> str:
    with pytest.raises(ImportFileError) as caught:
        read_pgbench_output(*args, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_garbled_progress_line_is_named_with_what_was_expected() -> None:
    lines = captured(15, "tx", "progress.txt").text.split("\n")
    lines[2] = "progress: 2.0 s, 5x6.0 tps, lat 3.6 ms stddev 2.5, 0 failed"
    said = refusal([UploadedText("progress.txt", "\n".join(lines))])
    assert said.startswith("line 3 of progress.txt: expected 'progress: <s> s, <tps> tps, lat <ms> ms stddev <ms>")
    assert "got 'progress: 2.0 s, 5x6.0 tps" in said


def test_a_summary_cut_before_its_tps_line_is_refused_at_its_last_line() -> None:
    text = captured(16, "tx", "summary.txt").text
    cut = text[: text.index("initial connection time")]
    said = refusal([UploadedText("summary.txt", cut)])
    assert (
        said == f"line {cut.count(chr(10))} of summary.txt: the report stops before its closing 'tps = …' line: "
        "the file is cut short"
    )


def test_a_summary_cut_in_the_middle_of_its_tps_line_is_refused() -> None:
    text = captured(13, "tx", "summary.txt").text
    said = refusal([UploadedText("summary.txt", text[: text.rindex("(excluding") + 5])])
    assert said.startswith("line 11 of summary.txt: expected 'tps = <number> (without initial connection time)'")


def test_a_line_pgbench_never_prints_is_refused() -> None:
    text = captured(17, "tx", "summary.txt").text.replace("query mode: simple", "query mode simple, as I recall")
    said = refusal([UploadedText("summary.txt", text)])
    assert (
        said == "line 4 of summary.txt: not a line pgbench prints in its report or progress: "
        "'query mode simple, as I recall'"
    )


def test_an_aborted_run_is_refused() -> None:
    text = (
        captured(15, "tx", "summary.txt").text + "pgbench: error: Run was aborted; the above results are incomplete.\n"
    )
    assert "pgbench reported an error, so its results are not whole" in refusal([UploadedText("s.txt", text)])


def test_a_transaction_log_cut_mid_line_is_refused_at_that_line() -> None:
    logs = thread_logs(15, "tx")
    logs[1] = UploadedText(logs[1].name, logs[1].text[:-9])
    said = refusal(reports(15, "tx"), transaction_logs=logs)
    assert said.startswith(f"line 150 of {logs[1].name}: the file ends in the middle of a line")


def test_a_transaction_log_line_with_a_word_for_a_number_is_named() -> None:
    logs = thread_logs(16, "tx")
    lines = logs[0].text.split("\n")
    lines[41] = lines[41].replace(" 0 ", " zero ", 1)
    said = refusal(reports(16, "tx"), transaction_logs=[UploadedText("t.log", "\n".join(lines))])
    assert said.startswith("line 42 of t.log: expected 'client_id transaction_no latency_us script_no")


def test_logs_uploaded_as_the_other_kind_are_refused_saying_so() -> None:
    said = refusal(reports(17, "tx"), transaction_logs=thread_logs(17, "agg"))
    assert "line 1 of pgbench_log.18077: this is an aggregate log line" in said
    said = refusal(reports(13, "tx"), aggregate_logs=thread_logs(13, "tx"))
    assert "line 1 of pgbench_log.17776: this is a per-transaction log line" in said


def test_an_aggregate_log_line_with_missing_columns_is_named() -> None:
    log = thread_logs(15, "agg")[0]
    lines = log.text.split("\n")
    lines[1] = " ".join(lines[1].split()[:9])
    said = refusal(reports(15, "agg"), aggregate_logs=[UploadedText("agg.log", "\n".join(lines))])
    assert said.startswith("line 2 of agg.log: expected 'interval_start count latency_sum")


def test_no_summary_and_no_progress_is_refused() -> None:
    said = refusal([UploadedText("empty-ish.txt", "starting vacuum...end.\n")])
    assert "neither pgbench's report" in said


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\x00\x01binary", "x.bin: not a text file"),
        (b"tps = 1 \xff\xfe", "line 1 of x.bin: not UTF-8 text"),
        (b"  \n", "x.bin: the file is empty"),
        (b"a" * (MAX_FILE_BYTES + 1), "x.bin: 20,971,521 bytes is over the 20 MiB a file may have"),
    ],
    ids=["binary", "not-utf8", "empty", "too-large"],
)
def test_files_that_are_not_pgbench_text_are_refused(data: bytes, said: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        decode_upload("x.bin", data)
    assert str(caught.value).startswith(said)


@pytest.mark.parametrize(
    ("fixture", "tps"),
    [
        ("pgbench_pre14/pg9x_T300_r_gist.stdout.txt", 110.792180),  # pgbench 9.x with -r's statement latencies
        ("pgbench15/multi_script.stdout.txt", 2621.917408),  # per-script blocks
        ("pgbench15/rate_limited.stdout.txt", 207.282263),  # -R with --latency-limit: skipped, late, lag
        ("pgbench15/serializable_retries.stdout.txt", 413.460164),  # retries and failures
        ("pgbench15/connect_each.stdout.txt", 247.098712),  # -C: average connection time
    ],
)
def test_the_lab_fixtures_other_reports_are_accepted_whole(fixture: str, tps: float) -> None:
    text = (DATA.parent.parent / "fixtures" / fixture).read_text()
    assert read_pgbench_output([UploadedText("summary.txt", text)]).tps == tps


def test_progress_with_timestamps_is_counted_from_the_first_second() -> None:
    text = (DATA.parent.parent / "fixtures" / "pgbench15" / "progress_timestamp.stderr.txt").read_text()
    output = read_pgbench_output([UploadedText("progress.txt", text)])
    assert [second for second, _ in output.samples] == [1, 2, 3] and output.duration_s == 3


def test_a_t_runs_report_alone_is_timed_by_its_transactions_at_its_tps() -> None:
    text = (DATA.parent.parent / "fixtures" / "pgbench15" / "tpcb_t500.stdout.txt").read_text()
    output = read_pgbench_output([UploadedText("s", text)])
    assert output.tps == 2664.279472 and output.duration_s == 1  # 2000 transactions in 0.75 s
    longer = text.replace("500\n", "50000\n").replace("2000/2000", "200000/200000")
    assert read_pgbench_output([UploadedText("s", longer)]).duration_s == 75  # 200000 / 2664.28 = 75.07


def test_a_run_without_duration_progress_or_transactions_is_refused_saying_why() -> None:
    text = (DATA.parent.parent / "fixtures" / "pgbench15" / "tpcb_t500.stdout.txt").read_text()
    cut = text.replace("number of transactions actually processed: 2000/2000\n", "")
    assert "no duration: the report has no 'duration: <s> s' line, no transactions" in refusal([UploadedText("s", cut)])
