"""A strict reader of uploaded pgbench output (issue 35): the report (summary) and `-P` progress
lines. No Django.

runs.lab.parse reads what benchlab's own pgbench printed and skips lines it does not know, so a
run is never lost to a new field. An upload is different: a file cut short or a wrong file
must be refused before anything is stored, so every line here is either one pgbench prints or
an ImportFileError naming the file, the line and what was expected. The values themselves are
read by the lab's parsers (parse_summary, parse_progress_line), which know pgbench 8.4 to 17.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from runs.lab.parse.pgbench import ProgressSample, parse_progress_line
from runs.lab.parse.pgbench_summary import PgbenchSummary, is_summary_line, parse_summary

MAX_FILE_BYTES = 20 * 1024 * 1024  # an hour of -l at 5,000 tps is ~10 MB; bigger ones: --sampling-rate


class ImportFileError(ValueError):
    """What is wrong with one uploaded file, where (line 0: the file as a whole)."""

    def __init__(self, file_name: str, line_number: int, problem: str) -> None:
        self.file_name, self.line_number, self.problem = file_name, line_number, problem
        where = f"line {line_number} of {file_name}" if line_number else file_name
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class UploadedText:
    """One uploaded file: its name as sent, and its text."""

    name: str
    text: str


def decode_upload(name: str, data: bytes) -> UploadedText:
    """The file's text; refused when it is too large, empty or not text (pgbench writes ASCII)."""
    if len(data) > MAX_FILE_BYTES:
        limit = MAX_FILE_BYTES // (1024 * 1024)
        raise ImportFileError(name, 0, f"{len(data):,} bytes is over the {limit} MiB a file may have")
    if not data.strip():
        raise ImportFileError(name, 0, "the file is empty")
    if b"\0" in data:
        raise ImportFileError(name, 0, "not a text file (it holds NUL bytes): upload pgbench's output as it wrote it")
    try:
        return UploadedText(name, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFileError(name, line, "not UTF-8 text: upload pgbench's output as it wrote it") from exc


# What each kind of report line looks like, for the message when one does not parse.
_EXPECTED = {
    "progress:": "'progress: <s> s, <tps> tps, lat <ms> ms stddev <ms>[, <n> failed]…'",
    "tps =": "'tps = <number> (without initial connection time)' or '(excluding connections establishing)'",
    "latency average": "'latency average = <ms> ms'",
    "latency stddev": "'latency stddev = <ms> ms'",
    "number of transactions actually processed": "'number of transactions actually processed: <n>'",
    "number of failed transactions": "'number of failed transactions: <n> (<pct>%)'",
    "number of clients": "'number of clients: <n>'",
    "number of threads": "'number of threads: <n>'",
    "scaling factor": "'scaling factor: <n>'",
    "duration": "'duration: <s> s'",
    "initial connection time": "'initial connection time = <ms> ms'",
}
# Lines pgbench prints around its report that carry no figure benchlab keeps: -r's statement
# latencies and per-script blocks (indented or " - "), vacuum, warnings, the version banner.
_OTHER_LINES = re.compile(
    r"^(?:\s|starting vacuum|pgbench: warning: |pgbench \(|SQL script \d+: |statement latencies|"
    r"latency average and stddev|NOTICE:|WARNING:|dropping old tables|creating tables|"
    r"(?:generating|vacuuming|creating primary keys|done in|done\.)|\d+ of \d+ tuples)"
)


def _refuse_line(file_name: str, number: int, line: str) -> ImportFileError:
    shown = line if len(line) <= 120 else line[:117] + "..."
    for prefix, expected in _EXPECTED.items():
        if line.startswith(prefix):
            return ImportFileError(file_name, number, f"expected {expected}, got {shown!r}")
    if line.startswith("pgbench: error: ") or line.startswith("pgbench: fatal: "):
        return ImportFileError(file_name, number, f"pgbench reported an error, so its results are not whole: {shown!r}")
    return ImportFileError(file_name, number, f"not a line pgbench prints in its report or progress: {shown!r}")


@dataclass(frozen=True)
class ReportRead:
    """What the report files held: the summary (None without one) and the progress lines."""

    summary: PgbenchSummary | None
    progress: tuple[ProgressSample, ...]


def _last_line_cut(upload: UploadedText) -> bool:
    return not upload.text.endswith("\n")


def read_report(uploads: Sequence[UploadedText]) -> ReportRead:
    """The summary and progress lines of one pgbench run, from one file or two (stdout and
    stderr, or both in one: `2>&1`). Every line is checked; a summary must end with its tps line."""
    summary_lines: list[str] = []
    progress: list[ProgressSample] = []
    for upload in uploads:
        last_summary_line = 0
        lines = upload.text.splitlines()
        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip("\r")
            if not line.strip():
                continue
            if line.startswith("progress:"):
                sample = parse_progress_line(line)
                if sample is None:
                    raise _refuse_line(upload.name, number, line)
                if progress and sample.elapsed_s <= progress[-1].elapsed_s:
                    raise ImportFileError(
                        upload.name,
                        number,
                        f"progress goes back in time ({sample.elapsed_s:g} s after "
                        f"{progress[-1].elapsed_s:g} s): these are not one run's lines in their order",
                    )
                progress.append(sample)
            elif is_summary_line(line):
                summary_lines.append(line)
                last_summary_line = number
            elif not _OTHER_LINES.match(line):
                raise _refuse_line(upload.name, number, line)
        if last_summary_line and not any(line.startswith("tps = ") for line in summary_lines):
            raise ImportFileError(
                upload.name, len(lines), "the report stops before its closing 'tps = …' line: the file is cut short"
            )
        if _last_line_cut(upload) and lines and lines[-1].startswith("progress:"):
            # A progress line cut mid-number still parses: the missing newline is the only sign.
            raise ImportFileError(upload.name, len(lines), "the file ends in the middle of a line: it is cut short")
    summary = parse_summary("\n".join(summary_lines)) if summary_lines else None
    return ReportRead(summary=summary, progress=tuple(progress))
