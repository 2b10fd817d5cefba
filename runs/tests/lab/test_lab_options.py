"""User-given options the lab layer validates before anything touches a lab machine.

mount and mkfs options, run keys, pgbench command lines, PostgreSQL settings, and the
pg_stat deltas computed from two snapshots. Pure functions: no host, no network.
Some tests guard bugs found and fixed while the lab layer was written; their messages say
what the bug was, should it come back. The expectation is what the tool (pgbench,
PostgreSQL, mkfs.xfs) itself accepts or refuses.
"""

from collections.abc import Callable

import pytest

from runs.lab.benchmark.metrics import PgStatsDelta, PgStatsSnapshot, _summed, checkpointer_row_sql, pg_stats_delta
from runs.lab.errors import InvalidOption
from runs.lab.options import parse_mkfs_options, parse_mount_options
from runs.lab.pgbench.commands import Connection, InitOptions, RunOptions, init_command, run_command
from runs.lab.postgres.cluster import RESERVED_SETTINGS, check_setting, hba_address, parse_settings
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.prepare import directory_for, mountpoint_for

Parse = Callable[[str, str], tuple[str, ...]]


def refusal(parse: Parse, fstype: str, text: str, why: str = "") -> str:
    """The InvalidOption message for a refused option text; fails the test if it was accepted."""
    try:
        accepted = parse(fstype, text)
    except InvalidOption as exc:
        return str(exc)
    raise AssertionError(f"{parse.__name__}({fstype!r}, {text!r}) accepted {accepted!r}{why}")


# --- mount options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fstype", "text", "expected"),
    [
        ("ext4", "noatime,data=writeback,barrier=0", ("noatime", "data=writeback", "barrier=0")),
        ("ext4", "nobarrier", ("nobarrier",)),
        ("ext4", "commit=60", ("commit=60",)),
        ("ext4", " noatime , commit=5 ,", ("noatime", "commit=5")),
        ("btrfs", "nodatacow", ("nodatacow",)),
        ("btrfs", "compress=zstd:3,noatime", ("compress=zstd:3", "noatime")),
        ("xfs", "logbufs=8,logbsize=256k", ("logbufs=8", "logbsize=256k")),
        ("tmpfs", "size=512m", ("size=512m",)),
        ("tmpfs", "size=50%,huge=always", ("size=50%", "huge=always")),
        ("ext4", "", ()),
        ("directory", "", ()),
    ],
)
def test_it_accepts_mount_options_the_filesystem_knows(fstype: str, text: str, expected: tuple[str, ...]) -> None:
    assert parse_mount_options(fstype, text) == expected


@pytest.mark.parametrize(
    ("fstype", "text", "named"),
    [
        ("ext4", "noatime,turbo", "'turbo'"),
        ("ext4", "data=fast", "'data=fast'"),
        ("ext4", "commit=abc", "'commit=abc'"),
        # Digits to Python (\d), not to mount: Arabic-Indic, fullwidth, Devanagari.
        ("ext4", "commit=\u0665", "'commit=\u0665'"),
        ("ext4", "commit=\uff15", "'commit=\uff15'"),
        ("btrfs", "compress=zstd:\u0663", "'compress=zstd:\u0663'"),
        ("xfs", "logbsize=\u0968\u096b\u096ck", "'logbsize=\u0968\u096b\u096ck'"),
        ("tmpfs", "size=\uff11\uff10%", "'size=\uff11\uff10%'"),
        ("ext4", "noatime=1", "'noatime=1'"),
        ("ext4", "nodatacow", "'nodatacow'"),
        ("xfs", "data=writeback", "'data'"),
        ("btrfs", "compress=gzip", "'compress=gzip'"),
        ("tmpfs", "size=lots", "'size=lots'"),
        ("tmpfs", "nobarrier", "'nobarrier'"),
        # The mount root's permissions are benchlab's: a world-writable root would let the run's
        # user swap the directories root makes there.
        ("tmpfs", "mode=0777", "'mode'"),
        ("directory", "noatime", "'noatime'"),
    ],
)
def test_it_refuses_a_mount_option_naming_it(fstype: str, text: str, named: str) -> None:
    message = refusal(parse_mount_options, fstype, text)

    assert named in message
    assert fstype in message


@pytest.mark.parametrize(
    "text",
    [
        "noatime;rm -rf /",
        "$(reboot)",
        "noatime,`reboot`",
        "commit=5|reboot",
        "commit=5 && reboot",
        "data=writeback\nreboot",
    ],
)
def test_it_refuses_mount_options_with_shell_metacharacters(text: str) -> None:
    message = refusal(parse_mount_options, "ext4", text)

    assert "ext4" in message


def test_it_refuses_mount_options_for_an_unknown_filesystem() -> None:
    message = refusal(parse_mount_options, "zfs", "noatime")

    assert "'zfs'" in message


# --- mkfs options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fstype", "text", "expected"),
    [
        ("ext4", "-b 4096", ("-b", "4096")),
        ("ext4", "-b 4096 -O ^has_journal -m 0", ("-b", "4096", "-O", "^has_journal", "-m", "0")),
        ("ext4", "-E lazy_itable_init=0,lazy_journal_init=0", ("-E", "lazy_itable_init=0,lazy_journal_init=0")),
        ("xfs", "-b size=4096", ("-b", "size=4096")),
        ("xfs", "-m crc=1,reflink=0", ("-m", "crc=1,reflink=0")),
        ("btrfs", "-n 16k", ("-n", "16k")),
        ("btrfs", "-d single -m dup", ("-d", "single", "-m", "dup")),
        ("ext4", "", ()),
        ("tmpfs", "   ", ()),
    ],
)
def test_it_accepts_mkfs_options_the_filesystem_knows(fstype: str, text: str, expected: tuple[str, ...]) -> None:
    assert parse_mkfs_options(fstype, text) == expected


@pytest.mark.parametrize(
    ("fstype", "text", "named"),
    [
        ("ext4", "-b", "flag/value pairs"),
        ("ext4", "-b 4096 -m", "flag/value pairs"),
        ("ext4", "-F yes", "-F"),
        ("ext4", "-c 1", "-c"),
        ("xfs", "-f 1", "-f"),
        ("ext4", "-b 3000", "-b '3000'"),
        ("ext4", "-m 100", "-m '100'"),
        ("ext4", "-m \u0665", "-m '\u0665'"),
        ("ext4", "-E stride=\uff14", "-E 'stride=\uff14'"),
        ("xfs", "-b size=\uff14\uff10\uff19\uff16", "-b 'size=\uff14\uff10\uff19\uff16'"),
        ("btrfs", "-n \u0661\u0666k", "-n '\u0661\u0666k'"),
        ("xfs", "-b 4096", "-b '4096'"),
        ("btrfs", "-d raid5", "-d 'raid5'"),
        ("btrfs", "-n huge", "-n 'huge'"),
        ("tmpfs", "-b 4096", "tmpfs takes no mkfs options"),
        ("directory", "-b 4096", "directory takes no mkfs options"),
    ],
)
def test_it_refuses_mkfs_options_naming_them(fstype: str, text: str, named: str) -> None:
    assert named in refusal(parse_mkfs_options, fstype, text)


@pytest.mark.parametrize(
    ("fstype", "text"),
    [
        ("ext4", "-b '4096; reboot'"),
        ("ext4", "-b 4096;reboot"),
        ("ext4", "-b $(reboot)"),
        ("ext4", "-O '^has_journal && reboot'"),
        ("ext4", "-E 'stride=4,`reboot`'"),
        ("btrfs", "-O 'no-holes|reboot'"),
        ("xfs", "-b size=4096k;reboot"),
        ("xfs", "-l 'size=64m,$(reboot)'"),
        ("xfs", "-d 'su=64k,`reboot`'"),
    ],
)
def test_it_refuses_mkfs_options_with_shell_metacharacters(fstype: str, text: str) -> None:
    bug = ""
    if text.startswith(("-l ", "-d ")) and fstype == "xfs":
        bug = (
            " — regressed: runs/lab/options.py MKFS_OPTIONS['xfs']['-l'] and ['-d'] end in '(,.+)?', which accepts"
            " any text at all after the first comma"
        )
    refusal(parse_mkfs_options, fstype, text, why=bug)


@pytest.mark.parametrize("text", ["-l size=64m,logdev=/dev/sdc", "-d agcount=4,name=/dev/sda"])
def test_it_refuses_xfs_mkfs_options_that_name_another_device(text: str) -> None:
    refusal(
        parse_mkfs_options,
        "xfs",
        text,
        why=(
            " — regressed: runs/lab/options.py MKFS_OPTIONS['xfs'] ('-l'/'-d' regexes end in '(,.+)?'): mkfs.xfs would"
            " write to a device (logdev=/name=) that device_assert_wipeable never checked"
        ),
    )


def test_it_refuses_mkfs_options_with_an_unbalanced_quote_as_an_invalid_option() -> None:
    try:
        message = refusal(parse_mkfs_options, "ext4", '-b "4096')
    except ValueError as exc:
        raise AssertionError(
            "regressed: runs/lab/options.py parse_mkfs_options: shlex.split's ValueError "
            f"({exc}) escapes instead of InvalidOption, so the user sees a crash, not a refusal"
        ) from exc
    assert "mkfs" in message


# --- mountpoints ---------------------------------------------------------------------------------


def test_it_mounts_block_devices_under_the_benchlab_root() -> None:
    identity = DeviceIdentity(path="/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNX0R123456")

    assert mountpoint_for("r42-3", identity) == "/mnt/benchlab/benchlab-r42-3"


@pytest.mark.parametrize("path", ["/srv/bench", "/srv/bench/"])
def test_it_uses_a_subdirectory_of_a_directory_device(path: str) -> None:
    assert mountpoint_for("r42.3_a", DeviceIdentity(path=path)) == "/mnt/benchlab/benchlab-r42.3_a"
    assert directory_for("r42.3_a", path) == "/srv/bench/benchlab-r42.3_a"


@pytest.mark.parametrize("run_key", ["../x", "a b", "", "x/y", "a;b", "$(id)", "r1\n"])
def test_it_refuses_a_bad_run_key(run_key: str) -> None:
    with pytest.raises(InvalidOption) as info:
        mountpoint_for(run_key, DeviceIdentity(path="/dev/sdb"))

    assert repr(run_key) in str(info.value)


# --- pgbench -------------------------------------------------------------------------------------

BIN = "/usr/lib/postgresql/17/bin"
SOCKET = Connection(host="/mnt/benchlab/benchlab-r1/pg/socket", port=54321)
SOCKET_ARGS = ["-h", "/mnt/benchlab/benchlab-r1/pg/socket", "-p", "54321", "-U", "postgres"]
RUN_DIR = "/mnt/benchlab/benchlab-r1/run"
LOG_ARGS = ["--progress=1", "--aggregate-interval=1", "-l", f"--log-prefix={RUN_DIR}/pgbench_log"]


def test_it_builds_a_plain_init_command() -> None:
    connection = Connection(host="10.0.0.7", port=5432, database="tpcb", user="bench")

    assert init_command(BIN, connection, InitOptions(scale=1)) == [
        f"{BIN}/pgbench",
        "-i",
        "-s",
        "1",
        "-h",
        "10.0.0.7",
        "-p",
        "5432",
        "-U",
        "bench",
        "tpcb",
    ]


def test_it_builds_a_rate_limited_tpcb_run() -> None:
    options = RunOptions(
        builtin="tpcb-like",
        clients=16,
        threads=4,
        duration_s=300,
        query_mode="prepared",
        rate_tps=500.0,
    )

    assert run_command(BIN, SOCKET, options, RUN_DIR) == [
        f"{BIN}/pgbench",
        *SOCKET_ARGS,
        "-b",
        "tpcb-like",
        "-c",
        "16",
        "-j",
        "4",
        "-M",
        "prepared",
        "-T",
        "300",
        "-R",
        "500",
        *LOG_ARGS,
        "bench",
    ]


def test_it_runs_a_custom_script_from_its_path_on_the_host() -> None:
    options = RunOptions(builtin=None, custom_script="\\set aid random(1, 100000)\nSELECT 1;\n", clients=4, threads=2)

    assert run_command(BIN, SOCKET, options, RUN_DIR, script_path=f"{RUN_DIR}/custom.sql") == [
        f"{BIN}/pgbench",
        *SOCKET_ARGS,
        "-f",
        f"{RUN_DIR}/custom.sql",
        "-c",
        "4",
        "-j",
        "2",
        "-M",
        "simple",
        "-T",
        "60",
        *LOG_ARGS,
        "bench",
    ]


@pytest.mark.parametrize(
    ("rate", "log_args"),
    [
        (1.0, ["-l"]),  # every transaction
        (0.05, ["--sampling-rate=0.05", "-l"]),
    ],
)
def test_a_per_transaction_log_replaces_the_aggregate_log(rate: float, log_args: list[str]) -> None:
    # pgbench refuses --sampling-rate together with --aggregate-interval.
    options = RunOptions(duration_s=45, log_sampling_rate=rate)

    argv = run_command(BIN, SOCKET, options, RUN_DIR)

    tail = argv[argv.index("--progress=1") :]
    assert tail == ["--progress=1", *log_args, f"--log-prefix={RUN_DIR}/pgbench_log", "bench"]


def test_it_refuses_a_custom_script_without_its_path() -> None:
    options = RunOptions(builtin=None, custom_script="SELECT 1;")

    with pytest.raises(InvalidOption, match="path"):
        run_command(BIN, SOCKET, options, RUN_DIR)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (RunOptions(clients=2, threads=4), "threads cannot exceed clients"),
        (RunOptions(builtin="tpcc"), "unknown builtin workload 'tpcc'"),
        (RunOptions(query_mode="fast"), "query mode"),
        (RunOptions(builtin=None, custom_script=" \n\t"), "custom script is empty"),
        (RunOptions(builtin=None, custom_script=None), "either a builtin workload or a custom script"),
        (RunOptions(builtin="tpcb-like", custom_script="SELECT 1;"), "either a builtin workload or a custom script"),
        (RunOptions(clients=0, threads=0), "at least 1"),
        (RunOptions(duration_s=0), "duration must be at least 1"),
        (RunOptions(rate_tps=0), "rate limit must be positive"),
        (RunOptions(log_sampling_rate=0), "sampling rate must be above 0 and at most 1"),
        (RunOptions(log_sampling_rate=1.5), "sampling rate must be above 0 and at most 1"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_it_refuses_bad_run_options(options: RunOptions, message: str) -> None:
    with pytest.raises(InvalidOption, match=message):
        options.validate()
    with pytest.raises(InvalidOption, match=message):
        run_command(BIN, SOCKET, options, RUN_DIR, script_path=f"{RUN_DIR}/custom.sql")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (InitOptions(scale=0), "scale must be between 1 and 100000"),
        (InitOptions(scale=100_001), "scale must be between 1 and 100000"),
    ],
    ids=["scale-0", "scale-100001"],
)
def test_it_refuses_bad_init_options(options: InitOptions, message: str) -> None:
    with pytest.raises(InvalidOption, match=message):
        options.validate()
    with pytest.raises(InvalidOption, match=message):
        init_command(BIN, SOCKET, options)


@pytest.mark.parametrize("database", ["Bench", "1bench", "bench; drop", "bench-1", "", "bench\n"])
def test_it_refuses_a_bad_database_name(database: str) -> None:
    connection = Connection(host="/tmp", port=5432, database=database)
    bug = (
        " — regressed: runs/lab/pgbench/commands.py DATABASE_NAME is used with re.match and ends in '$', which"
        " also matches before a trailing newline (use fullmatch or \\Z)"
        if database.endswith("\n")
        else ""
    )
    for build in (
        lambda: init_command(BIN, connection, InitOptions(scale=1)),
        lambda: run_command(BIN, connection, RunOptions(), RUN_DIR),
    ):
        try:
            argv = build()
        except InvalidOption as exc:
            assert "bad database name" in str(exc)
        else:
            raise AssertionError(f"database {database!r} was accepted: {argv}{bug}")


# --- PostgreSQL settings -------------------------------------------------------------------------


def test_it_reads_settings_with_comments_and_blank_lines() -> None:
    text = (
        "# tuning for the NVMe box\n"
        "shared_buffers = 8GB\n"
        "\n"
        "   work_mem=64MB   # per sort\n"
        "synchronous_commit = off\n"
        "checkpoint_timeout = 15min\n"
        "max_wal_size = 4GB\n"
        "max_wal_size = 16GB\n"
    )

    assert parse_settings(text) == {
        "shared_buffers": "8GB",
        "work_mem": "64MB",
        "synchronous_commit": "off",
        "checkpoint_timeout": "15min",
        "max_wal_size": "16GB",
    }


def test_it_unquotes_values_and_their_doubled_quotes() -> None:
    text = "default_transaction_isolation = 'repeatable read'\nwal_level = 'replica'  # quoted\n"

    assert parse_settings(text) == {"default_transaction_isolation": "repeatable read", "wal_level": "replica"}
    # No allowed setting takes a quote, but the refusal shows the value as read.
    with pytest.raises(InvalidOption) as info:
        parse_settings("wal_level = 'it''s a ''test'''\n")
    assert str(info.value).endswith("(got \"it's a 'test'\")")


def test_it_keeps_a_hash_inside_a_quoted_value() -> None:
    # No allowed value contains '#', so the value as read shows in the refusal: all of it, not cut at the '#'.
    with pytest.raises(InvalidOption) as info:
        parse_settings("wal_level = 'replica # not a comment'  # a comment\n")

    assert str(info.value).endswith("(got 'replica # not a comment')"), (
        f"got {info.value} — regressed: runs/lab/postgres/cluster.py parse_settings: raw.split('#', 1) cuts a quoted"
        " value at its '#' (postgresql.conf allows '#' inside quotes), leaving a stray opening quote in the value"
    )


@pytest.mark.parametrize("name", sorted(RESERVED_SETTINGS))
def test_it_refuses_settings_benchlab_sets_itself(name: str) -> None:
    with pytest.raises(InvalidOption) as info:
        parse_settings(f"work_mem = 64MB\n{name} = '5432'\n")

    assert "line 2" in str(info.value)
    assert name in str(info.value)


@pytest.mark.parametrize("directive", ["include", "include_if_exists", "include_dir"])
def test_it_refuses_include_directives(directive: str) -> None:
    try:
        settings = parse_settings(f"{directive} = '/etc/postgresql/override.conf'\n")
    except InvalidOption as exc:
        assert "line 1" in str(exc)
    else:
        raise AssertionError(
            f"got {settings!r} — regressed: runs/lab/postgres/cluster.py parse_settings/RESERVED_SETTINGS: "
            f"'{directive} = ...' is a postgresql.conf directive, not a setting; configure() writes it after"
            " benchlab's own lines, so the included file can set port, listen_addresses, data_directory... "
            "and undo every reserved setting"
        )


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("shared_buffers = 1GB\nwork_mem 64MB\n", 2, "expected 'name = value'"),
        ("# a comment\n\n= 5\n", 3, "expected 'name = value'"),
        ("Shared_Buffers = 1GB\n", 1, "not a PostgreSQL setting name"),
        ("fsync = on\nshared-buffers = 1GB\n", 2, "not a PostgreSQL setting name"),
        ("fsync = on\njit = off\n1abc = 2\n", 3, "not a PostgreSQL setting name"),
        ("work mem = 1\n", 1, "not a PostgreSQL setting name"),
        ("a.b.c = 1\n", 1, "not a PostgreSQL setting name"),
        ("fsync = on\nwork_mem;reboot = 1\n", 2, "not a PostgreSQL setting name"),
        ("fsync = on\nwork_mem = lots\n", 2, "work_mem must be a size such as 4MB"),
        ("fsync = on\napplication_name = x\n", 2, "not on benchlab's list of settings a benchmark may change"),
    ],
)
def test_it_refuses_malformed_setting_lines_naming_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(InvalidOption) as info:
        parse_settings(text)

    assert f"line {line}:" in str(info.value)
    assert fragment in str(info.value)


# --- pg_stat deltas ------------------------------------------------------------------------------

BEFORE = PgStatsSnapshot(
    database={"datname": "bench", "blks_hit": 1_000, "blks_read": 200, "xact_commit": 50, "xact_rollback": 1},
    bgwriter={
        "checkpoints_timed": 3,
        "checkpoints_req": 1,
        "buffers_checkpoint": 500,
        "buffers_clean": 20,
        "buffers_backend": 30,
        "buffers_backend_fsync": 0,
        "buffers_alloc": 9_999,
    },
)
AFTER = PgStatsSnapshot(
    database={"datname": "bench", "blks_hit": 10_000, "blks_read": 1_200, "xact_commit": 30_050, "xact_rollback": 4},
    bgwriter={
        "checkpoints_timed": 5,
        "checkpoints_req": 4,
        "buffers_checkpoint": 12_500,
        "buffers_clean": 320,
        "buffers_backend": 2_030,
        "buffers_backend_fsync": 2,
        "buffers_alloc": 20_000,
    },
)


def test_it_computes_the_difference_of_two_pg_stats_snapshots() -> None:
    delta = pg_stats_delta(BEFORE, AFTER)

    assert delta == PgStatsDelta(
        blocks_hit=9_000,
        blocks_read=1_000,
        transactions_committed=30_000,
        transactions_rolled_back=3,
        checkpoints_timed=2,
        checkpoints_requested=3,
        buffers_checkpoint=12_000,
        buffers_clean=300,
        buffers_backend=2_000,
        buffers_backend_fsync=2,
    )
    assert delta.cache_hit_ratio == pytest.approx(0.9)
    assert delta.checkpoints == 5
    assert delta.buffers_written == 14_300


def test_postgresql_17s_checkpointer_counters_are_read_from_pg_stat_checkpointer_and_said_so() -> None:
    # As checkpointer_row_sql(170000) returns them: pg_stat_checkpointer's under pg_stat_bgwriter's names.
    moved = {"checkpoints_from": "pg_stat_checkpointer"}
    before = PgStatsSnapshot(database={}, bgwriter=BEFORE.bgwriter | moved)
    after = PgStatsSnapshot(database={}, bgwriter=AFTER.bgwriter | moved)

    delta = pg_stats_delta(before, after)

    assert (delta.checkpoints_timed, delta.checkpoints_requested, delta.buffers_checkpoint) == (2, 3, 12_000)
    assert delta.checkpoints_source == "pg_stat_checkpointer"
    assert pg_stats_delta(BEFORE, AFTER).checkpoints_source == "pg_stat_bgwriter"
    assert "pg_stat_checkpointer" not in checkpointer_row_sql(160009)
    assert "FROM pg_stat_bgwriter b, pg_stat_checkpointer c" in checkpointer_row_sql(170000)
    assert "c.num_timed" in checkpointer_row_sql(180001)


def test_it_has_no_cache_hit_ratio_without_block_accesses() -> None:
    delta = pg_stats_delta(BEFORE, BEFORE)

    assert delta.cache_hit_ratio is None
    assert (delta.checkpoints, delta.buffers_written, delta.transactions_committed) == (0, 0, 0)


def test_it_counts_missing_and_null_counters_as_zero() -> None:
    empty = PgStatsSnapshot(database={}, bgwriter={})
    nulls = PgStatsSnapshot(database={"blks_hit": None, "blks_read": 10}, bgwriter={"checkpoints_timed": None})

    delta = pg_stats_delta(empty, nulls)

    assert (delta.blocks_hit, delta.blocks_read, delta.checkpoints_timed) == (0, 10, 0)
    assert delta.cache_hit_ratio == 0.0


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("archive_command = 'cp %p /tmp'", "it runs commands on the host"),
        ("ssl_passphrase_command = 'id'", "it runs commands on the host"),
        ("shared_preload_libraries = 'evil'", "it loads code into the server from files on the host"),
        ("logging_collector = on", "it chooses where and how logs are written on the host"),
        ("auto_explain.log_min_duration = 0", "benchlab loads no extensions"),
    ],
)
def test_it_refuses_settings_that_run_commands_or_load_code_on_the_host(line: str, reason: str) -> None:
    with pytest.raises(InvalidOption, match=r"^setting line 1: .* cannot be set from benchlab: ") as info:
        parse_settings(line)

    assert reason in str(info.value)


def test_configure_checks_settings_that_did_not_come_through_the_form() -> None:
    with pytest.raises(InvalidOption, match="spans lines"):
        check_setting("work_mem", "4MB'\nport = 1")
    with pytest.raises(InvalidOption, match="not a PostgreSQL setting name"):
        check_setting("work_mem\nport", "1")


@pytest.mark.parametrize(
    "script", ["\\shell rm -rf /\n", "SELECT 1;\n  \\setshell x echo 1\n", "\\SHELL id\n", "\\SetShell x id\n"]
)
def test_it_refuses_custom_scripts_that_run_shell_commands(script: str) -> None:
    with pytest.raises(InvalidOption, match="is not allowed"):
        RunOptions(builtin=None, custom_script=script).validate()


def test_it_refuses_the_ext4_option_that_would_panic_the_kernel_on_a_disk_error() -> None:
    with pytest.raises(InvalidOption, match="bad value"):
        parse_mount_options("ext4", "errors=panic")


@pytest.mark.parametrize(
    ("address", "field"),
    [("10.200.7.12", "10.200.7.12/32"), ("fd00::12", "fd00::12/128"), ("client-1.lab.example", "client-1.lab.example")],
)
def test_pg_hba_trusts_exactly_the_client_host(address: str, field: str) -> None:
    assert hba_address(address) == field


@pytest.mark.parametrize("address", ["10.0.0.0/8", "all", "samenet", "SameHost", "host name", "-x", ""])
def test_pg_hba_refuses_anything_but_one_host(address: str) -> None:
    # pg_hba's keywords would match whole networks; a CIDR or spaces would widen or break the line.
    with pytest.raises(InvalidOption):
        hba_address(address)


def test_several_databases_counters_are_summed_and_a_column_whole_in_one_row_only_is_left_out() -> None:
    # As pg_stat_database's rows come back as JSON: session_time is a float8, printed 0 when it is.
    rows: list[dict[str, object]] = [
        {"datid": 1, "datname": "bench_1", "xact_commit": 10, "session_time": 0},
        {"datid": 2, "datname": "bench_2", "xact_commit": 32, "session_time": 197.494},
    ]

    assert _summed(rows) == {"xact_commit": 42}
