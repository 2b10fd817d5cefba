"""What a raw device baseline measures, and fio's command line for it. Pure: no host.

`FioSettings` is what a person chooses (how much of the device, how long per job, which of
the standard jobs); the Django side stores and validates it without a machine. `FioPlan` adds
what only the host knows (the device node or file fio uses, where its JSON goes), and
`fio_command` turns it into argv. Every job option is a command-line job section built from
fixed values; nothing a user typed becomes a job file.

The standard jobs, run one after another (`--stonewall`) in this order so that the reads
read data the writes put there (a fresh loop device or thin-provisioned disk reads its
holes without any I/O):
- seq-write, seq-read: 1 MiB blocks at queue depth 8, the bandwidth of large transfers;
- rand-read-qd1, rand-read-qd32, rand-write-qd1, rand-write-qd32: 4 KiB blocks, IOPS and
  latency of one request at a time (what a single PostgreSQL backend sees) and of a deep queue.
All with O_DIRECT (the page cache must not answer) and total latency percentiles
(`lat_percentiles`: submission plus completion, what the caller waits for).
"""

import re
from dataclasses import dataclass

from runs.lab.errors import InvalidOption

MiB = 2**20
GiB = 2**30


@dataclass(frozen=True)
class FioJob:
    name: str
    rw: str  # fio's rw=: read, write, randread, randwrite
    bs: str  # fio's block size
    iodepth: int

    def args(self) -> list[str]:
        # --stonewall: this job starts once the previous ones have finished (one at a time).
        return [f"--name={self.name}", f"--rw={self.rw}", f"--bs={self.bs}", f"--iodepth={self.iodepth}", "--stonewall"]


STANDARD_JOBS: tuple[FioJob, ...] = (
    FioJob("seq-write", "write", "1M", 8),
    FioJob("seq-read", "read", "1M", 8),
    FioJob("rand-read-qd1", "randread", "4k", 1),
    FioJob("rand-read-qd32", "randread", "4k", 32),
    FioJob("rand-write-qd1", "randwrite", "4k", 1),
    FioJob("rand-write-qd32", "randwrite", "4k", 32),
)
JOB_NAMES = tuple(job.name for job in STANDARD_JOBS)
# libaio works with O_DIRECT on every kernel benchlab meets and is what published fio figures
# mostly use; io_uring may be switched off (kernel.io_uring_disabled, container seccomp).
IOENGINES = ("libaio", "io_uring", "psync")
PERCENTILES = ("50", "99")  # the ones the results show (p50, p99)

MIN_SIZE_BYTES = 16 * MiB  # room for a queue of eight 1 MiB requests, twice over
MAX_SIZE_BYTES = 64 * 2**40
MAX_RUNTIME_S = 3600
MAX_RAMP_S = 600
# fio splits --filename at ':' (several files) and reads '$' as a variable: a target path
# may hold only plain characters.
_TARGET = re.compile(r"/[A-Za-z0-9/._+@-]*")


@dataclass(frozen=True)
class FioSettings:
    """The person's choice: what to measure, on whatever device the run is given."""

    size_bytes: int = 1 * GiB  # the region of the device (or the file) the jobs use
    runtime_s: int = 30  # measured seconds per job
    ramp_s: int = 2  # seconds per job before measuring starts (queues fill, caches settle)
    jobs: tuple[str, ...] = JOB_NAMES  # a subset of the standard jobs, run in standard order
    ioengine: str = "libaio"

    def validate(self) -> None:
        if not MIN_SIZE_BYTES <= self.size_bytes <= MAX_SIZE_BYTES:
            raise InvalidOption(
                f"the fio size must be between {MIN_SIZE_BYTES // MiB} MiB and {MAX_SIZE_BYTES // 2**40} TiB, "
                f"not {self.size_bytes} bytes"
            )
        if self.size_bytes % MiB:
            raise InvalidOption(f"the fio size must be a whole number of MiB (1 MiB blocks), not {self.size_bytes}")
        if not 1 <= self.runtime_s <= MAX_RUNTIME_S:
            raise InvalidOption(f"the runtime per job must be 1 to {MAX_RUNTIME_S} s, not {self.runtime_s}")
        if not 0 <= self.ramp_s <= MAX_RAMP_S:
            raise InvalidOption(f"the ramp time per job must be 0 to {MAX_RAMP_S} s, not {self.ramp_s}")
        if not self.jobs:
            raise InvalidOption(f"choose at least one fio job of {', '.join(JOB_NAMES)}")
        unknown = [name for name in self.jobs if name not in JOB_NAMES]
        if unknown:
            raise InvalidOption(f"unknown fio job {unknown[0]!r}; the jobs are {', '.join(JOB_NAMES)}")
        if len(set(self.jobs)) != len(self.jobs):
            raise InvalidOption("each fio job may be chosen once")
        if self.ioengine not in IOENGINES:
            raise InvalidOption(f"the fio I/O engine must be one of {', '.join(IOENGINES)}, not {self.ioengine!r}")

    def job_list(self) -> list[FioJob]:
        """The chosen jobs in standard order (writes before the reads of the same data)."""
        return [job for job in STANDARD_JOBS if job.name in self.jobs]

    def expected_seconds(self) -> int:
        """How long the jobs take, laying out a file aside: a time limit is made from this."""
        return len(self.jobs) * (self.runtime_s + self.ramp_s)


@dataclass(frozen=True)
class FioPlan:
    settings: FioSettings
    target: str  # a device node (raw) or a file path on a mounted filesystem
    output_path: str  # where fio writes its JSON

    def validate(self) -> None:
        self.settings.validate()
        for what, path in (("target", self.target), ("output path", self.output_path)):
            if not _TARGET.fullmatch(path) or {"..", "."} & set(path.split("/")) or "//" in path:
                raise InvalidOption(
                    f"the fio {what} {path!r} must be an absolute path of letters, digits and / . _ + @ - only"
                )


def fio_command(plan: FioPlan) -> list[str]:
    """fio's argv: global options, then one job section per chosen job."""
    plan.validate()
    settings = plan.settings
    return [
        "fio",
        "--output-format=json",
        f"--output={plan.output_path}",
        "--eta=never",  # no progress lines: nothing reads them
        # Jobs as threads of one process: fio's forked job processes start sessions of their
        # own, so a cancel by the wrapper's process group would not reach them.
        "--thread",
        f"--filename={plan.target}",
        f"--size={settings.size_bytes}",
        "--direct=1",
        f"--ioengine={settings.ioengine}",
        "--time_based",
        f"--runtime={settings.runtime_s}s",
        f"--ramp_time={settings.ramp_s}s",
        "--lat_percentiles=1",
        f"--percentile_list={':'.join(PERCENTILES)}",
        *[arg for job in settings.job_list() for arg in job.args()],
    ]
