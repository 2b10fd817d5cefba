"""The PostgreSQL settings an operator may give a run's throw-away cluster (runs/lab/postgres/settings.py).

Most tests are derived from the table, so a new entry is covered without a new test. The last two
compare the table with a real PostgreSQL 15 (127.0.0.1:5432, pg_settings) and fail when it is not there:
the table is only as right as that comparison.
"""

import json
import subprocess
from typing import Any

import pytest

from runs.lab.errors import InvalidOption
from runs.lab.postgres.setting_values import DBL_MAX, INT_MIN, Setting
from runs.lab.postgres.settings import (
    ALLOWED,
    GROUPS,
    INCLUDE_DIRECTIVES,
    REFUSED,
    RESERVED_SETTINGS,
    SETTING_NAME,
    check_setting,
    refusal,
)

SETTINGS = sorted(ALLOWED.values(), key=lambda setting: setting.name)
FLAGS = [setting for setting in SETTINGS if setting.kind == "bool"]
ENUMS = [setting for setting in SETTINGS if setting.kind == "enum"]
NUMBERS = [setting for setting in SETTINGS if setting.kind in ("integer", "real")]


def message(key: str, value: str) -> str:
    """check_setting's refusal; fails the test if the setting was accepted."""
    try:
        check_setting(key, value)
    except InvalidOption as exc:
        return str(exc)
    raise AssertionError(f"{key} = {value!r} was accepted")


def ids(settings: list[Setting]) -> list[str]:
    return [setting.name for setting in settings]


# --- the table ------------------------------------------------------------------------------------------


def test_no_setting_is_in_two_groups_or_both_allowed_and_refused() -> None:
    listed = [setting.name for group in GROUPS.values() for setting in group]

    assert len(listed) == len(set(listed)) == len(ALLOWED)
    assert not [name for name in ALLOWED if refusal(name) or not SETTING_NAME.fullmatch(name)]


@pytest.mark.parametrize("setting", [s for s in NUMBERS if s.unit], ids=ids([s for s in NUMBERS if s.unit]))
def test_the_example_of_a_setting_with_a_unit_shows_the_unit(setting: Setting) -> None:
    assert not setting.example.lstrip("-").replace(".", "").isdigit(), f"{setting.name}: {setting.example!r}"


# --- allowed settings accept their values ---------------------------------------------------------------


@pytest.mark.parametrize("setting", SETTINGS, ids=ids(SETTINGS))
def test_every_allowed_setting_accepts_its_example(setting: Setting) -> None:
    check_setting(setting.name, setting.example)


@pytest.mark.parametrize("setting", NUMBERS, ids=ids(NUMBERS))
def test_every_number_accepts_its_bounds_and_a_bare_number_in_its_base_unit(setting: Setting) -> None:
    bare = setting.in_base_unit(setting.example)
    assert bare is not None

    for value in (setting.min, setting.max, bare):
        text = repr(value) if setting.kind == "real" else str(int(value))
        check_setting(setting.name, text)


@pytest.mark.parametrize("setting", FLAGS, ids=ids(FLAGS))
def test_every_boolean_accepts_all_spellings_of_on_and_off(setting: Setting) -> None:
    for value in ("on", "off", "true", "false", "yes", "no", "1", "0", "ON", "Off", "TRUE", "t", "f", "y", "n", "of"):
        check_setting(setting.name, value)


@pytest.mark.parametrize("value", ["o", "", " on", "on ", "2", "enabled", "yess", "nope", "0n", "tru e", "ön"])
def test_a_boolean_refuses_what_postgresql_refuses(value: str) -> None:
    assert message("fsync", value) == (
        f"fsync must be a boolean: on, off, true, false, yes, no, 1 or 0 (got {value!r})"
    )


@pytest.mark.parametrize("setting", ENUMS, ids=ids(ENUMS))
def test_every_enum_accepts_its_values_in_any_case_and_names_them_when_refusing(setting: Setting) -> None:
    for value in (*setting.values, *setting.aliases):
        check_setting(setting.name, value)
        check_setting(setting.name, value.upper())

    assert message(setting.name, "maybe") == f"{setting.name} must be one of {', '.join(setting.values)} (got 'maybe')"
    assert "must be one of" in message(setting.name, f"{setting.values[0]}x")


# --- bad values are refused with what would do -----------------------------------------------------------


@pytest.mark.parametrize("setting", NUMBERS, ids=ids(NUMBERS))
def test_every_number_refuses_a_non_number_saying_what_it_must_be(setting: Setting) -> None:
    assert message(setting.name, "12 parsecs") == f"{setting.name} must be {setting.describe()} (got '12 parsecs')"
    assert setting.example in setting.describe()


@pytest.mark.parametrize(
    "setting", [s for s in NUMBERS if s.min > INT_MIN], ids=ids([s for s in NUMBERS if s.min > INT_MIN])
)
def test_every_number_refuses_a_value_below_its_range(setting: Setting) -> None:
    below = setting.min - 1

    text = message(setting.name, repr(below) if setting.kind == "real" else str(int(below)))

    assert text.startswith(f"{setting.name} must be between ") or text.startswith(f"{setting.name} must be at least ")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "synchronous_commit",
            "maybe",
            "synchronous_commit must be one of on, off, local, remote_write, remote_apply (got 'maybe')",
        ),
        (
            "shared_buffers",
            "12 parsecs",
            "shared_buffers must be a size such as 128MB or 16384 (8kB pages) (got '12 parsecs')",
        ),
        ("shared_buffers", "64kB", "shared_buffers must be between 16 and 1073741823 (8kB pages) (got '64kB')"),
        (
            "work_mem",
            "64mb",
            "work_mem must be a size such as 4MB or 4096 (kB) (got '64mb'; units are case-sensitive: MB)",
        ),
        ("work_mem", "0x40", "work_mem must be a size such as 4MB or 4096 (kB) (got '0x40')"),
        ("work_mem", "0100", "work_mem must be a size such as 4MB or 4096 (kB) (got '0100')"),
        ("work_mem", "63.4", "work_mem must be between 64 and 2147483647 (kB) (got '63.4')"),
        (
            "checkpoint_timeout",
            "5MB",
            "checkpoint_timeout must be a duration such as 5min or 300 (seconds) (got '5MB')",
        ),
        ("checkpoint_timeout", "10s", "checkpoint_timeout must be between 30 and 86400 (seconds) (got '10s')"),
        ("max_connections", "100MB", "max_connections must be a whole number such as 100 (got '100MB')"),
        ("max_connections", "-5", "max_connections must be between 1 and 262143 (got '-5')"),
        ("random_page_cost", "-1", "random_page_cost must be at least 0 (got '-1')"),
        ("random_page_cost", "fast", "random_page_cost must be a number such as 1.1 (got 'fast')"),
        ("checkpoint_completion_target", "1.5", "checkpoint_completion_target must be between 0 and 1 (got '1.5')"),
        (
            "autovacuum_work_mem",
            "all",
            "autovacuum_work_mem must be a size such as 256MB or 262144 (kB), or -1 (got 'all')",
        ),
        ("log_temp_files", "-2", "log_temp_files must be between -1 and 2147483647 (kB) (got '-2')"),
        ("vacuum_cost_delay", "200ms", "vacuum_cost_delay must be between 0 and 100 (milliseconds) (got '200ms')"),
        ("wal_level", "archive ", "wal_level must be one of minimal, replica, logical (got 'archive ')"),
    ],
)
def test_a_bad_value_is_refused_with_the_values_allowed(key: str, value: str, expected: str) -> None:
    assert message(key, value) == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("work_mem", " 64 MB "),  # PostgreSQL skips blanks around the number and the unit
        ("work_mem", "63.5"),  # rounded half to even, like PostgreSQL: 64
        ("work_mem", "1e3"),
        ("work_mem", "2.5GB"),
        ("temp_buffers", "1000000B"),
        ("vacuum_cost_delay", "500us"),
        ("autovacuum_vacuum_cost_delay", "-1"),
        ("max_pred_locks_per_relation", "-2"),
        ("wal_level", "hot_standby"),  # unlisted, but PostgreSQL still takes it for replica
        ("default_transaction_isolation", "Repeatable Read"),
        ("huge_pages", "TRUE"),
    ],
)
def test_it_accepts_what_postgresql_accepts(key: str, value: str) -> None:
    check_setting(key, value)


# --- refused names ---------------------------------------------------------------------------------------

PREFIXED = [  # real settings caught by a refusal's prefix
    "log_rotation_age",
    "log_rotation_size",
    "syslog_facility",
    "syslog_ident",
    "syslog_sequence_numbers",
    "syslog_split_messages",
    "ssl_cert_file",
    "ssl_key_file",
    "ssl_ca_file",
    "ssl_crl_dir",
    "ssl_ciphers",
    "ssl_min_protocol_version",
    "ssl_prefer_server_ciphers",
    "krb_server_keyfile",
    "krb_caseins_users",
    "tcp_keepalives_idle",
    "tcp_user_timeout",
    "unix_socket_group",
    "unix_socket_permissions",
]
REFUSED_NAMES = sorted({name for rule in REFUSED for name in rule.names} | set(PREFIXED))


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_settings_touching_files_libraries_logs_network_or_commands_are_refused_with_the_reason(name: str) -> None:
    rules = [rule for rule in REFUSED if rule.covers(name)]
    assert rules, f"{name} is in no refusal"

    assert message(name, "on") == f"{name} cannot be set from benchlab: {rules[0].reason}"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("logging_collector", "it chooses where and how logs are written on the host"),
        ("log_filename", "it chooses where and how logs are written on the host"),
        ("log_file_mode", "it chooses where and how logs are written on the host"),
        ("archive_command", "it runs commands on the host"),
        ("ssl_passphrase_command", "it runs commands on the host"),
        ("archive_mode", "archiving hands WAL to a command or library on the host"),
        ("shared_preload_libraries", "it loads code into the server from files on the host"),
        ("jit_provider", "it loads code into the server from files on the host"),
        ("ssl", "it concerns the network, connections or authentication"),
        ("krb_server_keyfile", "it concerns the network, connections or authentication"),
        ("password_encryption", "it concerns the network, connections or authentication"),
        ("external_pid_file", "it names files or directories on the host"),
        ("config_file", "it names files or directories on the host"),
        ("temp_tablespaces", "it puts data in tablespaces"),
    ],
)
def test_the_reasons_read_as_a_sentence(name: str, reason: str) -> None:
    assert message(name, "x").startswith(f"{name} cannot be set from benchlab: {reason}")


@pytest.mark.parametrize("name", sorted(RESERVED_SETTINGS))
def test_settings_benchlab_sets_itself_keep_their_message(name: str) -> None:
    assert message(name, "5432") == f"{name} is set by benchlab itself"


@pytest.mark.parametrize("name", sorted(INCLUDE_DIRECTIVES))
def test_include_directives_are_refused(name: str) -> None:
    assert message(name, "/etc/postgresql/override.conf").startswith(f"{name} cannot be set from benchlab: ")


@pytest.mark.parametrize("name", ["auto_explain.log_min_duration", "pg_stat_statements.track", "plpgsql.check_asserts"])
def test_extension_and_custom_settings_are_refused(name: str) -> None:
    assert message(name, "0") == (
        f"{name} cannot be set from benchlab: a name with a dot is an extension's or a custom setting,"
        " and benchlab loads no extensions"
    )


@pytest.mark.parametrize(
    "name", ["application_name", "search_path", "log_connections", "statement_timeout", "zero_damaged_pages", "no_such"]
)
def test_any_other_name_is_not_on_the_list(name: str) -> None:
    text = message(name, "0")

    assert text == f"{name} is not on benchlab's list of settings a benchmark may change ({', '.join(GROUPS)})"
    assert "memory, WAL, checkpoints" in text


def test_a_value_spanning_lines_is_refused_before_it_is_parsed() -> None:
    assert message("work_mem", "4MB\nport = 1") == "the value of work_mem spans lines"
    assert message("fsync", "on\0") == "the value of fsync spans lines"


# --- the table against a real PostgreSQL 15 --------------------------------------------------------------

KIND_OF_VARTYPE = {"bool": "bool", "integer": "integer", "real": "real", "enum": "enum"}
# Whole categories of pg_settings in which every setting is either allowed or refused with a reason.
GUARDED_CATEGORIES = {
    "File Locations",
    "Reporting and Logging / Where to Log",
    "Connections and Authentication / Connection Settings",
    "Connections and Authentication / Authentication",
    "Connections and Authentication / SSL",
    "Client Connection Defaults / Shared Library Preloading",
    "Write-Ahead Log / Archiving",
    "Write-Ahead Log / Archive Recovery",
}


@pytest.fixture(scope="module")
def postgresql_15() -> dict[str, dict[str, Any]]:
    """pg_settings of the local PostgreSQL 15 by name. Not reachable: the test errors, it is not skipped."""
    query = (
        "SELECT json_build_object('version', current_setting('server_version_num'),"
        " 'settings', json_agg(json_build_object('name', name, 'vartype', vartype, 'unit', coalesce(unit, ''),"
        " 'min_val', min_val, 'max_val', max_val,"
        " 'enumvals', enumvals, 'category', category))) FROM pg_settings"
    )
    result = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-AtX", "-c", query],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, f"PostgreSQL 15 on 127.0.0.1:5432 is needed for this test: {result.stderr}"
    answer = json.loads(result.stdout)
    assert answer["version"].startswith("15"), f"expected PostgreSQL 15, got server_version_num {answer['version']}"
    return {row["name"]: row for row in answer["settings"]}


def test_the_table_agrees_with_postgresql_15(postgresql_15: dict[str, dict[str, Any]]) -> None:
    problems = []
    for setting in SETTINGS:
        in_15 = setting.since <= 15 and (setting.until is None or setting.until >= 15)
        row = postgresql_15.get(setting.name)
        if row is None or not in_15:
            if (row is None) == in_15:
                problems.append(f"{setting.name}: in 15 is {row is not None}, the table says {in_15}")
            continue
        if row["vartype"] != KIND_OF_VARTYPE[setting.kind] or row["unit"] != setting.unit:
            problems.append(
                f"{setting.name}: {row['vartype']} {row['unit']!r}, the table: {setting.kind} {setting.unit!r}"
            )
        if setting.kind == "enum" and not set(row["enumvals"]) <= set(setting.values):
            problems.append(f"{setting.name}: 15's values {row['enumvals']} are not all in {setting.values}")
        if setting.kind in ("integer", "real"):
            low, high = float(row["min_val"]), float(row["max_val"])
            high = DBL_MAX if high > 1.79e308 else high  # pg_settings rounds DBL_MAX to 1.79769e+308
            if setting.min > low or setting.max < high:
                problems.append(
                    f"{setting.name}: 15 takes {low:g}..{high:g}, the table {setting.min:g}..{setting.max:g}"
                )

    assert not problems, "\n".join(problems)


def test_postgresql_15s_files_logs_network_libraries_and_commands_are_refused_with_a_reason(
    postgresql_15: dict[str, dict[str, Any]],
) -> None:
    guarded = {name for name, row in postgresql_15.items() if row["category"] in GUARDED_CATEGORIES}
    guarded |= {"dynamic_library_path", "jit_provider", "extension_destdir", "temp_tablespaces", "default_tablespace"}

    unexplained = sorted(name for name in guarded if name not in ALLOWED and refusal(name) is None)

    assert not unexplained, f"not allowed, but refused without a reason: {unexplained}"
    assert guarded & set(ALLOWED) == {"max_connections", "superuser_reserved_connections"}
