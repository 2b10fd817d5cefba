"""LocalTransport against real processes on this machine, and the shell quoting SSH relies on.

Every command here is harmless (sh, printf, cat, sleep, pwd) and writes only under tmp_path.
Some tests guard bugs found and fixed in runs/lab/transport/local.py; their messages say what the bug was.
"""

import gc
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from runs.lab.errors import CommandFailed, CommandTimeout, LabError
from runs.lab.pgbench.follow import Follower
from runs.lab.transport.interface import CommandResult, as_user, command_line
from runs.lab.transport.local import LocalTransport
from runs.lab.transport.process import cancel, start_detached

PROJECT_ROOT = Path(__file__).resolve().parents[3]

# Words a shell would otherwise expand, split, glob, substitute or stop at.
NASTY_WORDS = [
    "with space",
    "  leading and trailing  ",
    "it's",
    'double "quoted"',
    "$(touch pwned)",
    "`touch pwned`",
    "$HOME",
    "${PATH}",
    "a;b",
    "x && y || z",
    "a|b>c<d",
    "line1\nline2\n",
    "tab\there",
    "*",
    "?",
    "[a-z]*",
    "~",
    "~root",
    "{a,b}",
    "!bang",
    "#not a comment",
    "\\back\\slash",
    "%s %d",
    "-n",
    "--",
    "",
    "ünïcödé ✓",
]


def printed_words(output: bytes) -> list[str]:
    """What `printf '%s\\0' WORD...` printed, split back into words."""
    assert output.endswith(b"\0"), output
    return output.decode().split("\0")[:-1]


def is_running(pid: int) -> bool:
    """True while pid exists and is not a zombie (a killed child waiting for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_until_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not is_running(pid):
            return True
        time.sleep(0.05)
    return not is_running(pid)


# --- exit status and output ----------------------------------------------------------------------


def test_it_collects_stdout_and_stderr_separately() -> None:
    argv = ["sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"]

    result = LocalTransport().run(argv)

    assert result == CommandResult(
        command=command_line(argv), exit_status=0, stdout="out1\nout2\n", stderr="err1\nerr2\n"
    )


def test_it_raises_command_failed_with_the_tail_of_stderr() -> None:
    argv = ["sh", "-c", "for i in $(seq 1 100); do printf 'err-%03d\\n' $i >&2; done; echo partial-out; exit 3"]

    with pytest.raises(CommandFailed) as info:
        LocalTransport(label="lab1").run(argv)

    failure = info.value
    assert (failure.exit_status, failure.host, failure.command) == (3, "lab1", command_line(argv))
    assert failure.stdout == "partial-out\n"
    assert failure.stderr.splitlines() == [f"err-{i:03d}" for i in range(1, 101)]
    message = str(failure)
    assert "exited with status 3" in message
    assert "err-061" in message and "err-100" in message
    assert "err-060" not in message  # only the last 40 lines


def test_it_returns_a_failure_without_raising_when_not_checking() -> None:
    result = LocalTransport().run(["sh", "-c", "echo nope >&2; exit 7"], check=False)

    assert (result.exit_status, result.stdout, result.stderr) == (7, "", "nope\n")


def test_it_returns_a_failed_status_for_a_missing_program_when_not_checking() -> None:
    try:
        result = LocalTransport().run(["benchlab-no-such-program"], check=False)
    except OSError as exc:
        raise AssertionError(
            f"regressed: local_transport.LocalTransport.run: Popen's {type(exc).__name__} escapes for a missing"
            " program even with check=False; SSHTransport returns the shell's status 127 instead, so callers"
            " such as probe._out or unmount_reliably's `fuser` crash only on the local transport"
        ) from exc
    assert result.exit_status != 0


def test_it_raises_a_lab_error_for_a_missing_program_when_checking() -> None:
    try:
        LocalTransport().run(["benchlab-no-such-program"])
    except LabError as exc:
        assert isinstance(exc, CommandFailed)
    except OSError as exc:
        raise AssertionError(
            f"regressed: local_transport.LocalTransport.run: a missing program raises {type(exc).__name__},"
            " not CommandFailed (a LabError) as the Transport interface and SSHTransport do"
        ) from exc
    else:
        raise AssertionError("a missing program did not fail")


# --- streaming -----------------------------------------------------------------------------------


def test_it_streams_lines_to_the_callbacks_as_they_arrive() -> None:
    out: list[tuple[str, float]] = []
    err: list[tuple[str, float]] = []
    script = "echo one; echo warn1 >&2; sleep 1; echo two; sleep 1; echo three; echo warn2 >&2"

    started = time.monotonic()
    result = LocalTransport().run(
        ["sh", "-c", script],
        on_stdout=lambda line: out.append((line, time.monotonic())),
        on_stderr=lambda line: err.append((line, time.monotonic())),
    )
    ended = time.monotonic()

    assert [line for line, _ in out] == ["one", "two", "three"]
    assert [line for line, _ in err] == ["warn1", "warn2"]
    assert ended - started >= 2.0
    assert ended - out[0][1] >= 1.5, "the first line came only when the command ended"
    assert ended - err[0][1] >= 1.5, "the first stderr line came only when the command ended"
    assert out[1][1] - out[0][1] >= 0.8
    assert (result.stdout, result.stderr) == ("one\ntwo\nthree\n", "warn1\nwarn2\n")


def test_it_delivers_a_last_line_without_a_newline() -> None:
    lines: list[str] = []

    result = LocalTransport().run(["printf", "a\\nb\\npartial"], on_stdout=lines.append)

    assert lines == ["a", "b", "partial"]
    assert result.stdout == "a\nb\npartial"


def test_it_delivers_long_lines_and_split_characters_whole() -> None:
    lines: list[str] = []
    code = "import sys; sys.stdout.write('x' * 200000 + '\\n' + 'a' * 65535 + '\\u00e9\\n' + 'end')"

    LocalTransport().run([sys.executable, "-c", code], on_stdout=lines.append)

    assert lines == ["x" * 200_000, "a" * 65_535 + "é", "end"]


# --- stdin and cwd -------------------------------------------------------------------------------


def test_it_feeds_stdin() -> None:
    result = LocalTransport().run(["sh", "-c", "read first; echo got:$first; cat"], stdin=b"hello\nworld\n")

    assert result.stdout == "got:hello\nworld\n"


def test_it_gives_a_command_without_input_an_empty_stdin() -> None:
    result = LocalTransport().run(["cat"], timeout=5)

    assert result.stdout == ""


def test_it_feeds_stdin_to_a_command_that_stops_reading_it() -> None:
    try:
        result = LocalTransport().run(["head", "-c", "5"], stdin=b"x" * 1_000_000, timeout=10)
    except BrokenPipeError as exc:
        raise AssertionError(
            "regressed: local_transport.LocalTransport.run: process.stdin.write(stdin) raises BrokenPipeError"
            " when the command exits before reading all its input (here `head -c 5`); subprocess.communicate"
            " ignores EPIPE for this reason"
        ) from exc
    assert result.stdout == "xxxxx"


def test_it_feeds_stdin_larger_than_a_pipe_to_a_command_that_echoes_it() -> None:
    # In a child interpreter: if the transport deadlocks, only the child hangs and is killed.
    code = (
        "from runs.lab.transport.local import LocalTransport\n"
        "result = LocalTransport().run(['cat'], stdin=b'x' * 1_000_000, timeout=5)\n"
        "print(len(result.stdout))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=15
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            "regressed: local_transport.LocalTransport.run: it writes all of stdin before reading any output,"
            " so `cat` with 1 MB of input fills the stdout pipe, blocks, and both wait forever — and the"
            " timeout (checked only in the read loop) never fires"
        ) from exc
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1000000"


def test_it_runs_in_the_given_directory(tmp_path: Path) -> None:
    workdir = tmp_path / "dir with 'quotes' and $(dollars)"
    workdir.mkdir()
    argv = ["sh", "-c", "pwd -P; ls"]
    (workdir / "marker").write_text("")

    result = LocalTransport().run(argv, cwd=str(workdir))

    assert result.stdout == f"{os.path.realpath(workdir)}\nmarker\n"
    assert result.command == command_line(argv, str(workdir))


# --- timeouts ------------------------------------------------------------------------------------


def test_it_times_out_and_kills_the_command_and_its_children(tmp_path: Path) -> None:
    script = "echo $$ > shell.pid; sleep 60 & echo $! > child.pid; wait"

    started = time.monotonic()
    with pytest.raises(CommandTimeout) as info:
        LocalTransport(label="lab1").run(["sh", "-c", script], timeout=1, cwd=str(tmp_path))
    elapsed = time.monotonic() - started

    shell_pid = int((tmp_path / "shell.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    try:
        assert 1.0 <= elapsed < 5.0
        assert (info.value.timeout, info.value.host) == (1, "lab1")
        assert "within 1 s" in str(info.value)
        assert wait_until_gone(shell_pid), f"the command (PID {shell_pid}) survived its timeout"
        assert wait_until_gone(child_pid), f"the command's child `sleep 60` (PID {child_pid}) survived its timeout"
    finally:
        for pid in (shell_pid, child_pid):
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)


def test_it_times_out_a_command_that_closed_its_output(tmp_path: Path) -> None:
    script = "exec >/dev/null 2>&1; echo $$ > shell.pid; sleep 4"

    started = time.monotonic()
    try:
        result = LocalTransport().run(["sh", "-c", script], timeout=0.5, cwd=str(tmp_path))
    except CommandTimeout:
        elapsed = time.monotonic() - started
        assert elapsed < 3.0
        assert wait_until_gone(int((tmp_path / "shell.pid").read_text()))
        return
    raise AssertionError(
        f"regressed: local_transport.LocalTransport.run: exited with {result.exit_status} after"
        f" {time.monotonic() - started:.1f} s despite timeout=0.5 — once stdout and stderr are closed the read"
        " loop ends and process.wait() is called without the remaining timeout"
    )


# --- resources -----------------------------------------------------------------------------------


def test_it_closes_its_pipes() -> None:
    gc.collect()  # garbage left by earlier tests must not be blamed on this command
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        LocalTransport().run(["echo", "hi"])
        gc.collect()

    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, (
        f"regressed: local_transport.LocalTransport.run never closes process.stdout/stderr: {leaks}"
        " (two file descriptors per command until garbage collection)"
    )


# --- quoting -------------------------------------------------------------------------------------


def test_it_passes_every_word_to_the_program_unchanged(tmp_path: Path) -> None:
    result = LocalTransport().run(["printf", "%s\\0", *NASTY_WORDS], cwd=str(tmp_path))

    assert printed_words(result.stdout.encode()) == NASTY_WORDS
    assert not (tmp_path / "pwned").exists()


def test_it_quotes_a_command_line_the_shell_turns_back_into_the_same_words(tmp_path: Path) -> None:
    line = command_line(["printf", "%s\\0", *NASTY_WORDS])

    done = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, check=True, timeout=10)

    assert printed_words(done.stdout) == NASTY_WORDS
    assert not (tmp_path / "pwned").exists()


def test_it_quotes_a_command_line_with_a_directory(tmp_path: Path) -> None:
    workdir = tmp_path / "it's a $(dir) with `ticks` ; and * globs"
    workdir.mkdir()
    line = command_line(["sh", "-c", "pwd -P; printf '%s\\0' \"$@\"", "sh", *NASTY_WORDS], str(workdir))

    done = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, check=True, timeout=10)

    cwd, _, words = done.stdout.partition(b"\n")
    assert cwd.decode() == os.path.realpath(workdir)
    assert printed_words(words) == NASTY_WORDS
    assert not (tmp_path / "pwned").exists()
    assert not (workdir / "pwned").exists()


def test_it_refuses_an_empty_command() -> None:
    with pytest.raises(ValueError, match="empty command"):
        command_line([])
    with pytest.raises(ValueError, match="empty command"):
        LocalTransport().run([])


def test_a_command_run_as_another_user_sees_none_of_the_workers_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CREDENTIALS_KEY", "a-secret-the-run-user-must-not-see")

    seen = LocalTransport().run(as_user("nobody", ["env"]), cwd="/").stdout

    assert "a-secret-the-run-user-must-not-see" not in seen
    assert sorted(seen.split()) == [
        "HOME=/nonexistent",
        "LC_ALL=C.UTF-8",
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    ]


# --- files ---------------------------------------------------------------------------------------


def test_it_writes_and_reads_files_with_their_mode(tmp_path: Path) -> None:
    transport = LocalTransport()
    target = tmp_path / "postgresql.conf"
    target.write_text("old and longer content\n")
    target.chmod(0o644)
    content = bytes(range(256)) * 3

    transport.write_file(str(target), content, mode=0o600)

    assert target.read_bytes() == content
    assert target.stat().st_mode & 0o777 == 0o600


def test_a_follower_gives_up_on_a_command_that_outlives_its_time_and_closes_its_connection(
    tmp_path: Path,
) -> None:
    opened: list[LocalTransport] = []
    closed: list[LocalTransport] = []

    class CountingTransport(LocalTransport):
        def close(self) -> None:
            closed.append(self)

    def connect() -> LocalTransport:
        opened.append(CountingTransport())
        return opened[-1]

    transport = LocalTransport()
    process = start_detached(transport, ["sh", "-c", "echo started >&2; sleep 60"], str(tmp_path), "slow")
    lines: list[str] = []
    started = time.monotonic()
    try:
        with pytest.raises(LabError, match=r"slow \(PID \d+\) still runs after 2 s"):
            Follower(connect, process, "stderr", lines.append).follow(timeout_s=2)
        gave_up_after = time.monotonic() - started
    finally:
        cancel(transport, process, grace_s=2)

    assert lines == ["started"]
    assert gave_up_after < 30
    assert opened and closed == opened
