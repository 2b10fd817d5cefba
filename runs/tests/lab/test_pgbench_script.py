"""Which backslash commands a custom pgbench script may hold, found where pgbench 15 finds them.

pgbench's \\shell and \\setshell run programs on the lab host, so a custom script passes only
if every meta-command in it is on a short list of harmless ones. What counts is where
*pgbench* sees a meta-command, not where a line starts with a backslash: these tests hide
commands in strings, comments and dollar quotes (accepted), put real ones after them
(refused), and compare the parser with the real pgbench 15, which reads a script given
with -f before it connects to any server.
"""

import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.commands import RunOptions
from runs.lab.pgbench.lexer import MetaCommand, meta_commands
from runs.lab.pgbench.script import ALLOWED_META_COMMANDS, check_custom_script, is_allowed

PGBENCH = Path("/usr/lib/postgresql/15/bin/pgbench")
PGBENCH_COMMANDS = {*ALLOWED_META_COMMANDS, "shell", "setshell"}


def refusal(script: str) -> str:
    """The InvalidOption message for a refused script; fails the test if it was accepted."""
    with pytest.raises(InvalidOption) as refused:
        check_custom_script(script)
    return str(refused.value)


def not_allowed(name: str, line: int) -> str:
    return f"custom script line {line}: \\{name} is not allowed"


# --- examples -------------------------------------------------------------------------


def test_it_refuses_shell_after_a_semicolon() -> None:
    assert not_allowed("shell", 1) in refusal("SELECT 1; \\shell id\n")


def test_it_refuses_shell_after_a_block_comment() -> None:
    assert not_allowed("shell", 1) in refusal("/* x */ \\shell id\n")


def test_it_refuses_setshell_glued_to_a_semicolon() -> None:
    assert not_allowed("setshell", 1) in refusal("select 1;\\setshell x id\n")


def test_it_refuses_shell_through_run_options() -> None:
    with pytest.raises(InvalidOption, match=r"line 2: \\shell is not allowed"):
        RunOptions(builtin=None, custom_script="SELECT 1;\nSELECT 2; \\shell id\n").validate()


def test_it_lists_the_allowed_commands_when_it_refuses_one() -> None:
    assert refusal("\\gexec") == (
        "custom script line 1: \\gexec is not allowed (allowed: \\set, \\sleep, \\if, \\elif, \\else, "
        "\\endif, \\gset, \\aset, \\startpipeline, \\endpipeline, \\syncpipeline)"
    )


@pytest.mark.parametrize(
    ("script", "name"),
    [
        ("\\SHELL id\n", "SHELL"),  # pgbench compares names case-insensitively
        ("\\SetShell x id\n", "SetShell"),
        ("\\ shell id\n", "shell"),  # blanks between the backslash and the word
        ("\\\t\r\fshell id\n", "shell"),  # "\r" is a blank there, not the end of the line
        ("\\\\\nshell id\n", "shell"),  # a continuation right after the backslash
        ("\\\\\r\nshell id\n", "shell"),  # ... also before "\r\n"
        ("\\shell\\\nid\n", "shell"),  # a continuation right after the word drops its backslash
        ("\\shell\\\r\nid\n", "shell"),
        ("\\\\shell id\n", "\\shell"),  # a second backslash is part of the word
        ("\\gexec\n", "gexec"),  # any word that is not on the list
        ("\\zzq\n", "zzq"),
    ],
)
def test_it_refuses_commands_off_the_list_however_they_are_spelled(script: str, name: str) -> None:
    assert meta_commands(script)[0] == MetaCommand(name, 1)
    assert refusal(script).startswith("custom script line 1: \\")


def test_it_names_the_line_of_the_backslash() -> None:
    script = "\\set a 1\nSELECT :a;\n-- \\zzq in a comment\nSELECT 2; \\\\\nsetshell x id\n"
    assert not_allowed("setshell", 4) in refusal(script)


@pytest.mark.parametrize("script", ["SELECT 1;\n\\\nSELECT 2;\n", "SELECT 1; \\"])
def test_it_refuses_a_backslash_with_no_command_after_it(script: str) -> None:
    assert refusal(script).startswith("custom script line ")
    assert "a backslash must be followed by a meta-command" in refusal(script)


@pytest.mark.parametrize(
    "script",
    [
        "SELECT 'a\\' \\shell id '\n",  # in a standard string a backslash escapes nothing
        "SELECT 'it''s' \\shell id\n",
        "SELECT E'\\\\' \\shell id '\n",  # E'\\' is one backslash, then the string ends
        'SELECT "x\\" \\shell id "\n',
        "SELECT U&'\\' \\shell id '\n",
        "SELECT $$ \\set $$ \\shell id\n",
        "SELECT $a$ $b$ $a$ \\shell id\n",
        "/* /* nested */ still a comment */ \\shell id\n",
        "-- comment\n\\shell id\n",
        "-- comment\r\\shell id\n",  # "\r" ends a -- comment too
        "SELECT E'a' /* c */\n'\\' \\shell id '\n",  # a /* */ comment breaks a string continuation
        "SELECT 1E'\\' \\shell id '\n",  # PG 15 lexes 1E as one (junk) token: the string is standard
        "SELECT $1E'\\' \\shell id '\n",
        "SELECT abcE'\\' \\shell id '\n",  # the E ends an identifier
        "SELECT :E'\\' \\shell id '\n",  # :E is a psql-style variable reference
        "SELECT 1e$a$ \\shell id $a$\n",  # the junk identifier takes "$a$": no dollar quote
        "SELECT a$b$ \\shell id $b$\n",  # an identifier may contain "$"
        "SELECT 1 \\gset\n\\shell id\n",
    ],
)
def test_it_refuses_shell_after_closed_strings_comments_and_dollar_quotes(script: str) -> None:
    assert not_allowed("shell", script.count("\n", 0, script.rindex("\\shell")) + 1) in refusal(script)


@pytest.mark.parametrize(
    "script",
    [
        "SELECT '\\shell id';\n",
        "SELECT 'it''s \\shell id';\n",
        "SELECT E'\\' \\shell id';\n",  # \' does not end an E string
        "SELECT E'a'\n'\\' \\shell id';\n",  # a continued E string stays one
        "SELECT E'a' -- it's\n-- continued\n'\\' \\shell id';\n",
        "-- \\shell id\n",
        "/* /* \\shell id */ \\shell id */\n",
        "SELECT $$ \\shell id $$;\n",
        "SELECT $f$ $$ \\shell id $f$;\n",
        'SELECT "\\shell id";\n',
        'SELECT U&"\\shell id";\n',
        "SELECT $E'\\' \\shell id';\n",  # "$E" is no dollar quote: the E string starts at E
        "SELECT $1$a$ \\shell id $a$;\n",  # after the parameter $1, $a$ opens a dollar quote
        "SELECT x::E'\\' \\shell id';\n",
    ],
)
def test_pgbench_sees_no_command_inside_strings_comments_and_dollar_quotes(script: str) -> None:
    assert meta_commands(script) == []


@pytest.mark.parametrize("script", ["SELECT '\\zzq';\n", "-- \\zzq\n", "SELECT $$ \\gexec $$;\n", "SELECT E'\\\\';\n"])
def test_it_accepts_backslashes_inside_strings_comments_and_dollar_quotes(script: str) -> None:
    check_custom_script(script)


@pytest.mark.parametrize(
    "script",
    [
        "SELECT '\\shell id';\n",
        "-- \\SetShell x id\n",
        "SELECT $$ \\ \\\nshell $$;\n",
        # pgbench 14 reads this 1E'…' as 1 and an E-string, so the \shell after it runs there.
        "SELECT 1E'\\'';\\shell id\n';\n",
    ],
)
def test_shell_is_refused_even_where_pgbench_15_would_not_run_it(script: str) -> None:
    assert "even inside a string or a comment" in refusal(script)


@pytest.mark.parametrize("script", ["SELECT 1 \\; SELECT 2;\n", "SELECT 1\\:\\:int;\n"])
def test_it_reads_backslash_semicolon_and_colon_as_sql(script: str) -> None:
    assert meta_commands(script) == []


def test_it_accepts_the_allowed_commands_in_any_case() -> None:
    script = (
        "\\set aid random(1, 100000 * :scale)\n"
        "\\SET bid random(1, 1 * :scale)\n"
        "\\sleep 10 ms\n"
        "\\if :aid > 50000\n"
        "  SELECT abalance FROM pgbench_accounts WHERE aid = :aid \\gset\n"
        "\\elif :aid < 10\n"
        "  SELECT 1 AS one \\aset\n"
        "\\else\n"
        "  SELECT 2;\n"
        "\\endif\n"
        "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n"
        "\\set delta random(-5000, \\\n  5000)\n"
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
    )
    check_custom_script(script)
    assert [command.name for command in meta_commands(script)] == [
        "set",
        "SET",
        "sleep",
        "if",
        "gset",
        "elif",
        "aset",
        "else",
        "endif",
        "startpipeline",
        "syncpipeline",
        "endpipeline",
        "set",
    ]


def test_a_continued_line_belongs_to_the_command_before_it() -> None:
    script = "\\sleep 1 \\\nms 'x\nSELECT 1; \\set a 1\n"
    assert meta_commands(script) == [MetaCommand("sleep", 1), MetaCommand("set", 3)]


# --- generated scripts ----------------------------------------------------------------
# A construct is a piece of SQL that ends where it started: outside any string or comment.
# Hidden constructs hold \shell-like commands where pgbench does not see them.

NAMES = st.sampled_from(["shell", "SHELL", "setshell", "SetShell", "zzq"])
HIDDEN_COMMAND = NAMES.map(lambda name: f"\\{name} id")


def text(without: str = "") -> st.SearchStrategy[str]:
    """Short text full of characters that mean something to the lexer, minus some."""
    return st.text(alphabet=[c for c in "aE x9_;:.()+-*/$'\"\\\n\r\té" if c not in without], max_size=8)


def joined(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(*parts), max_size=5).map("".join)


LINE_COMMENT = joined(text(without="\n\r"), HIDDEN_COMMAND).map(lambda body: f"--{body}\n")
BLOCK_COMMENT = st.recursive(
    joined(text(without="/*"), HIDDEN_COMMAND).map(lambda body: f"/*{body}*/"),
    lambda inner: joined(text(without="/*"), HIDDEN_COMMAND, inner).map(lambda body: f"/*{body}*/"),
    max_leaves=6,
)
STANDARD_STRING = st.builds(
    "{}'{}'".format,
    st.sampled_from(["", "N", "B", "X", "U&"]),
    joined(text(without="'"), st.just("''"), HIDDEN_COMMAND),
)
E_STRING_BODY = joined(text(without="'\\"), st.sampled_from(["\\'", "\\\\", "''", "\\n"]), HIDDEN_COMMAND)
E_STRING = st.builds("{}'{}'".format, st.sampled_from(["E", "e"]), E_STRING_BODY)
QUOTED_IDENTIFIER = st.builds(
    '{}"{}"'.format, st.sampled_from(["", "U&"]), joined(text(without='"'), st.just('""'), HIDDEN_COMMAND)
)


@st.composite
def dollar_quoted(draw: st.DrawFn) -> str:
    delimiter = "$" + draw(st.from_regex(r"([A-Za-z_][A-Za-z0-9_]{0,3})?", fullmatch=True)) + "$"
    body = draw(joined(text(), HIDDEN_COMMAND, st.just("$$")))
    # The first delimiter after the opening one closes the quote: it must be ours.
    return delimiter + body + delimiter if (body + delimiter).find(delimiter) == len(body) else delimiter + delimiter


# Whitespace with a newline (and maybe -- comments) between two quoted parts: one string.
STRING_GAP = (
    st.lists(st.sampled_from([" ", "\t", "\n", "\r", "\r\n", "-- it's\n"]), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda gap: "\n" in gap or "\r" in gap)
)
# The second part is E-string text only because it continues an E string; read as a
# standard string, its "\'" would end it and expose the command.
CONTINUED_E_STRING = st.builds("E'{}'{}'\\' {} {}'".format, E_STRING_BODY, STRING_GAP, HIDDEN_COMMAND, E_STRING_BODY)

# An allowed command whose arguments carry quotes and comment marks, continued over lines.
ALLOWED_COMMAND = st.builds(
    "\\{}{}\n".format,
    st.sampled_from(ALLOWED_META_COMMANDS).flatmap(lambda name: st.sampled_from([name, name.upper()])),
    st.lists(text(without="\\\n"), max_size=3).map(
        lambda lines: "".join(f" {line}\\\n" for line in lines[:-1]) + (f" {lines[-1]}" if lines else "")
    ),
)
PLAIN_SQL = st.sampled_from(
    ["SELECT 1", "SELECT $1", "SELECT a$b$c", "SELECT 1.5e3", "SELECT x::int", "SELECT 1 \\; 2"]
)

HIDDEN_CONSTRUCT = st.one_of(
    LINE_COMMENT,
    BLOCK_COMMENT,
    STANDARD_STRING,
    E_STRING,
    QUOTED_IDENTIFIER,
    dollar_quoted(),
    CONTINUED_E_STRING,
    ALLOWED_COMMAND,
    PLAIN_SQL,
)
# ";" ends a string for good: "'a'\n'b'" would be one string.
HIDDEN_SCRIPT = st.lists(HIDDEN_CONSTRUCT, max_size=6).map(lambda constructs: ";\n".join(constructs) + ";\n")

# Right before a real command: things that look like dollar quotes, but are not.
NOT_A_DOLLAR_QUOTE = st.sampled_from(["", " ", "SELECT $1 ", "SELECT $2$ ", "SELECT a$b$ ", "SELECT 1e$c$ ", "x$$"])


@st.composite
def real_command(draw: st.DrawFn) -> tuple[str, str]:
    """A command pgbench sees, spelled in the ways pgbench allows, and its name."""
    name = draw(NAMES)
    before = draw(st.lists(st.sampled_from([" ", "\t", "\r", "\\\n", "\\\r\n"]), max_size=3))
    after = draw(st.sampled_from(["", " id", "\\\n id", "\\\r\n x id", " x \\\n id"]))
    return "\\" + "".join(before) + name + after + "\n", name


@settings(max_examples=2 * settings().max_examples, database=None)
@given(HIDDEN_SCRIPT)
def test_commands_hidden_in_strings_comments_and_dollar_quotes_are_no_commands(script: str) -> None:
    assert [command for command in meta_commands(script) if not is_allowed(command.name)] == []
    # ...but a script holding the text of \shell is refused all the same (other pgbench versions).
    if re.search(r"\\(set)?shell", script, re.IGNORECASE):
        assert "even inside a string or a comment" in refusal(script)
    else:
        check_custom_script(script)


@settings(max_examples=2 * settings().max_examples, database=None)
@given(HIDDEN_SCRIPT, NOT_A_DOLLAR_QUOTE, real_command(), HIDDEN_SCRIPT)
def test_it_refuses_a_command_placed_after_closed_constructs(
    before: str, lookalike: str, command: tuple[str, str], after: str
) -> None:
    written, name = command
    prefix = before + lookalike
    script = prefix + written + after

    assert MetaCommand(name, prefix.count("\n") + 1) in meta_commands(script)
    assert refusal(script)


# --- the real pgbench -----------------------------------------------------------------
# Pieces of SQL and of backslash commands, glued at random. pgbench stops at the first
# meta-command it does not know and names it with its line; the parser must find the
# same one. Every known command here is complete on its line, so pgbench fails on
# nothing else before trying to connect (to a socket directory that does not exist).
FRAGMENTS = [
    *["'", "''", "E'", "e'", "N'", "B'", "U&'", "U&", 'U&"', '"', '""', "'a'\n'", "' -- c\n'", "E'\\''"],
    *["$$", "$a$", "$_$", "$a", "$", "$E", "$1", "$1$", "a$b$", "$1e", "1e", "1.5e", "1e-", "1e+5", "e+"],
    *["--", "-- x\r", "/*", "*/", "*/*", "/*/", "-", "*", "/", "+", "&", ".", "..", "1.", "0", "1", "1_"],
    *[":x", ":'x'", ':"x"', ":{?x}", "::", ":=", ":", "\\;", "\\:", "x", "E", "é", "select", ";"],
    *["\n", "\r", "\r\n", " ", "\t", "\f", "\v", "\\", "\\\n", "\\\r\n", "\\\r", "\\\\", "a\\", "\\'"],
    *["\\zzq", "\\zzq x", "\\ zzq", "\\zzq\\", "\\\\zzq", "\\set v 1\n", "\\sleep 1 ms\n", "\\set v 1 + \\\n 2\n"],
]


def first_command_pgbench_rejects(script: str) -> tuple[str, int] | None:
    """What pgbench 15 says when it reads the script: the unknown meta-command and its line."""
    assert PGBENCH.is_file(), (
        f"pgbench 15 is missing at {PGBENCH}: it comes with Debian's postgresql package "
        "(make system-packages installs it)"
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "script.sql")
        path.write_bytes(script.encode())
        result = subprocess.run(
            [str(PGBENCH), "-n", "-f", str(path), "-h", "/nonexistent-socket-dir", "-p", "1", "-t", "1"],
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PG_COLOR": "never"},
            timeout=60,
            check=False,
        )
    stderr = result.stderr.decode("utf-8", "replace")
    invalid = re.search(r':(\d+): invalid command in command "(.*)"$', stderr, re.MULTILINE)
    if invalid:
        return invalid.group(2), int(invalid.group(1))
    assert "connection to server on socket" in stderr or "empty command list" in stderr, (
        f"pgbench stopped for another reason:\n{stderr}"
    )
    return None


def first_command_the_parser_finds_unknown(script: str) -> tuple[str, int] | None:
    for command in meta_commands(script):
        if command.name and not (command.name.isascii() and command.name.lower() in PGBENCH_COMMANDS):
            return command.name, command.line
    return None


@settings(database=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
@example("SELECT 1; \\zzq id\n")
@example("SELECT 1e$a$ \\zzq $a$;\n")  # the junk identifier after a number takes "$a$"
@example("SELECT 1.5e--$_$\n\\zzq $_$\n")  # "1.5e-" is one token: no -- comment, but a dollar quote
@example("SELECT 1 \\zzq\\\r\n")  # a continuation may end in "\r\n"
@example("E'a' -- c\n-- d\n\n'\\' \\zzq'\n")  # one continued E string
def test_it_finds_the_unknown_command_that_pgbench_finds(script: str) -> None:
    assert first_command_the_parser_finds_unknown(script) == first_command_pgbench_rejects(script)
