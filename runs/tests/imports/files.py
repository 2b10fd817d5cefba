"""The captured pgbench output of runs/tests/imports/data/ (scripts/gen-pgbench-import-data)."""

from pathlib import Path

from runs.imports.parse import UploadedText

DATA = Path(__file__).parent / "data"
VERSIONS = (12, 13, 14, 15, 16, 17)


def captured(version: int, kind: str, name: str) -> UploadedText:
    return UploadedText(name, (DATA / f"pg{version}" / kind / name).read_text())


def thread_logs(version: int, kind: str) -> list[UploadedText]:
    """The run's pgbench_log.<pid>[.<thread>] files, first thread first."""
    paths = sorted((DATA / f"pg{version}" / kind).glob("pgbench_log.*"), key=lambda p: (len(p.name), p.name))
    return [UploadedText(path.name, path.read_text()) for path in paths]


def reports(version: int, kind: str) -> list[UploadedText]:
    return [captured(version, kind, "summary.txt"), captured(version, kind, "progress.txt")]
