"""Run options checked without a machine: mount and mkfs options, pgbench's options (kept in
runs/lab/pgbench/options.py, re-exported here), PostgreSQL settings and a client's pg_hba address.

Pure on purpose: the queue form, the API and campaign expansion validate a run
specification with these (runs/bench/specs.py) on the web server, before any lab host is
touched, and storage.py, pgbench.py and postgres.py apply the very same functions again
on the way to the host. So this module imports only the standard library and the other
pure lab modules (errors, pg_settings with pg_setting_values, pgbench_script) -- never a
transport, the run user, subprocess or Django; runs/tests/project/test_options_pure.py holds it to that.
"""

import ipaddress
import re
import shlex
from dataclasses import dataclass

from runs.lab.errors import InvalidOption

# pgbench's options live with pgbench (a second driver's beside them); every option a run takes
# is still importable from here.
from runs.lab.pgbench.options import BUILTIN_SCRIPTS as BUILTIN_SCRIPTS
from runs.lab.pgbench.options import DEFAULT_INIT_STEPS as DEFAULT_INIT_STEPS
from runs.lab.pgbench.options import INIT_STEPS as INIT_STEPS
from runs.lab.pgbench.options import MAX_LATENCY_LIMIT_MS as MAX_LATENCY_LIMIT_MS
from runs.lab.pgbench.options import MAX_PARTITIONS as MAX_PARTITIONS
from runs.lab.pgbench.options import MIN_LATENCY_LIMIT_MS as MIN_LATENCY_LIMIT_MS
from runs.lab.pgbench.options import PARTITION_METHODS as PARTITION_METHODS
from runs.lab.pgbench.options import QUERY_MODES as QUERY_MODES
from runs.lab.pgbench.options import InitOptions as InitOptions
from runs.lab.pgbench.options import RunOptions as RunOptions
from runs.lab.pgbench.options import check_init_steps as check_init_steps
from runs.lab.postgres.settings import check_setting

# ---- storage: mount and mkfs options --------------------------------------------------------

BLOCK_FILESYSTEMS = ("ext4", "xfs", "btrfs")
FILESYSTEMS = (*BLOCK_FILESYSTEMS, "tmpfs", "directory")

_N = r"\d+"
_SIZE = r"\d+[kKmMgG]?"
_ATIME = {"noatime": "", "relatime": "", "strictatime": "", "nodiratime": "", "lazytime": "", "nolazytime": ""}
# Mount options each filesystem may be given: name -> regex for its value ("" = takes no value).
# xfs barrier/nobarrier are listed on purpose: old kernels took them, and when this one does
# not, the user should see the kernel's own reason rather than ours.
MOUNT_OPTIONS: dict[str, dict[str, str]] = {
    "ext4": _ATIME
    | {
        "data": "ordered|writeback|journal",
        "barrier": "0|1|",
        "nobarrier": "",
        "commit": _N,
        "journal_async_commit": "",
        "journal_checksum": "",
        "nojournal_checksum": "",
        "delalloc": "",
        "nodelalloc": "",
        "discard": "",
        "nodiscard": "",
        "dioread_nolock": "",
        "dioread_lock": "",
        "auto_da_alloc": "",
        "noauto_da_alloc": "",
        "stripe": _N,
        "inode_readahead_blks": _N,
        "min_batch_time": _N,
        "max_batch_time": _N,
        "init_itable": _N + "|",
        "noinit_itable": "",
        "errors": "remount-ro|continue",  # not panic: with a failing disk it would stop the whole machine
    },
    "xfs": _ATIME
    | {
        "logbufs": _N,
        "logbsize": _SIZE,
        "allocsize": _SIZE,
        "inode64": "",
        "inode32": "",
        "largeio": "",
        "nolargeio": "",
        "discard": "",
        "nodiscard": "",
        "swalloc": "",
        "noalign": "",
        "wsync": "",
        "barrier": "",
        "nobarrier": "",
    },
    "btrfs": _ATIME
    | {
        "nodatacow": "",
        "datacow": "",
        "nodatasum": "",
        "datasum": "",
        "compress": r"(zlib|lzo|zstd)(:\d+)?|no|",
        "compress-force": r"(zlib|lzo|zstd)(:\d+)?",
        "ssd": "",
        "nossd": "",
        "ssd_spread": "",
        "nossd_spread": "",
        "discard": "sync|async|",
        "nodiscard": "",
        "autodefrag": "",
        "noautodefrag": "",
        "commit": _N,
        "space_cache": "v1|v2|",
        "nospace_cache": "",
        "barrier": "",
        "nobarrier": "",
        "flushoncommit": "",
        "noflushoncommit": "",
        "max_inline": _SIZE,
        "thread_pool": _N,
    },
    "tmpfs": _ATIME
    | {
        "size": _SIZE + "|" + r"\d+%",
        "nr_inodes": _SIZE,
        "huge": "never|always|within_size|advise",
    },
    "directory": {},
}


def _suboptions(one: str) -> str:
    """A comma-separated list of `one`."""
    return rf"({one})(,({one}))*"


# mkfs options: flag -> regex for its value. Destructive-by-design flags are not here.
MKFS_OPTIONS: dict[str, dict[str, str]] = {
    "ext4": {
        "-b": "1024|2048|4096|65536",
        "-I": "128|256|512|1024",
        "-i": _N,
        "-m": r"\d{1,2}(\.\d+)?",
        "-J": r"size=\d+",
        "-O": r"\^?[a-z_0-9]+(,\^?[a-z_0-9]+)*",
        "-E": r"[a-z_]+(=[\d]+)?(,[a-z_]+(=[\d]+)?)*",
        "-N": _N,
    },
    "xfs": {
        "-b": r"size=\d+[kK]?",
        "-s": r"size=\d+[kK]?",
        "-i": r"size=\d+[kK]?",
        # Sub-options from fixed lists only: logdev=, name=, file= would point mkfs at another device.
        "-l": _suboptions(r"size=\d+[kKmMgG]?|version=2|lazy-count=[01]|sunit=\d+|su=\d+[kK]?"),
        "-d": _suboptions(r"(agcount|agsize|su|sw|sunit|swidth)=\d+[kKmMgG]?"),
        "-m": r"(crc|finobt|reflink|rmapbt|bigtime)=[01](,(crc|finobt|reflink|rmapbt|bigtime)=[01])*",
        "-n": r"size=\d+[kK]?",
    },
    "btrfs": {
        "-n": r"\d+[kK]?",
        "-s": r"\d+[kK]?",
        "-d": "single|dup|raid0|raid1",
        "-m": "single|dup|raid0|raid1",
        "-O": r"\^?[a-z_\-0-9]+(,\^?[a-z_\-0-9]+)*",
        "-R": r"\^?[a-z_\-0-9]+(,\^?[a-z_\-0-9]+)*",
    },
}


def _value_allowed(pattern: str, value: str) -> bool:
    """Whether `value` is what `pattern` allows, read with ASCII classes: \\d alone would also
    take Arabic-Indic or fullwidth digits, digits to Python that mount, mkfs and the kernel refuse."""
    return re.fullmatch(pattern, value, re.ASCII) is not None


def parse_mount_options(fstype: str, text: str) -> tuple[str, ...]:
    """Validate comma-separated mount options against the filesystem's allow-list."""
    if fstype not in MOUNT_OPTIONS:
        raise InvalidOption(f"unknown filesystem {fstype!r}; choose one of {', '.join(FILESYSTEMS)}")
    allowed = MOUNT_OPTIONS[fstype]
    options = tuple(option.strip() for option in text.split(",") if option.strip())
    for option in options:
        name, _, value = option.partition("=")
        if name not in allowed:
            raise InvalidOption(f"mount option {name!r} is not allowed for {fstype}")
        if not _value_allowed(allowed[name], value):
            raise InvalidOption(f"mount option {option!r} has a bad value for {fstype}")
    return options


def parse_mkfs_options(fstype: str, text: str) -> tuple[str, ...]:
    """Validate mkfs options ("-b 4096 -O ^has_journal") against the filesystem's allow-list."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise InvalidOption(f"mkfs options {text!r} cannot be read: {exc}") from exc
    if not words:
        return ()
    if fstype not in MKFS_OPTIONS:
        raise InvalidOption(f"{fstype} takes no mkfs options")
    allowed = MKFS_OPTIONS[fstype]
    if len(words) % 2:
        raise InvalidOption(f"mkfs options must be flag/value pairs, got {text!r}")
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag not in allowed:
            raise InvalidOption(f"mkfs option {flag} is not allowed for {fstype}")
        if not _value_allowed(allowed[flag], value):
            raise InvalidOption(f"mkfs option {flag} {value!r} has a bad value for {fstype}")
    return tuple(words)


CACHE_STATES = ("warm", "cold")
DATA_STATES = ("reused", "fresh", "frozen")


@dataclass(frozen=True)
class StateBefore:
    """What the run does between loading and measuring (benchmark/state.py): a cold cache
    (sync, drop the OS caches, restart PostgreSQL) or a warm one; freshly loaded data, frozen
    (VACUUM FREEZE + CHECKPOINT) or reused from the run that kept it; a CHECKPOINT; a settle pause."""

    cache: str = "warm"
    data: str = "reused"
    checkpoint: bool = True
    settle_s: float = 5.0  # the longest wait for a quiet device

    def validate(self) -> None:
        if self.cache not in CACHE_STATES:
            raise InvalidOption(f"the cache state must be one of {', '.join(CACHE_STATES)}, not {self.cache!r}")
        if self.data not in DATA_STATES:
            raise InvalidOption(f"the data state must be one of {', '.join(DATA_STATES)}, not {self.data!r}")
        if not 0 <= self.settle_s <= 600:
            raise InvalidOption("the settle pause must be between 0 and 600 s")


# ---- PostgreSQL: settings and pg_hba --------------------------------------------------------


def _split_value(raw_value: str, number: int) -> str:
    """The value of a postgresql.conf line: a quoted string ('' escapes) or a bare word;
    a `#` starts a comment only outside quotes."""
    value = raw_value.strip()
    if value.startswith("'"):
        match = re.match(r"'((?:[^']|'')*)'\s*(#.*)?$", value)
        if not match:
            raise InvalidOption(f"setting line {number}: unterminated or malformed quoted value {value!r}")
        return match.group(1).replace("''", "'")
    return value.split("#", 1)[0].strip()


def parse_settings(text: str) -> dict[str, str]:
    """`key = value` lines (comments and blank lines allowed) into validated settings: see pg_settings."""
    settings: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, raw_value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidOption(f"setting line {number}: expected 'name = value', got {line!r}")
        settings[key] = _split_value(raw_value, number)
        try:
            check_setting(key, settings[key])
        except InvalidOption as exc:
            raise InvalidOption(f"setting line {number}: {exc}") from exc
    return settings


HBA_KEYWORDS = ("all", "samehost", "samenet")  # pg_hba address keywords: whole networks


def hba_address(address: str) -> str:
    """A client's address as a pg_hba.conf address field: exactly that one host."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        # A host name: PostgreSQL resolves it and checks the reverse lookup.
        name_ok = re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?", address)
        if not name_ok or address.lower() in HBA_KEYWORDS:
            raise InvalidOption(f"bad client address {address!r}") from None
        return address
    return f"{ip}/{ip.max_prefixlen}"
