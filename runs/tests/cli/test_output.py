"""What `benchlab` prints and decides without a server: tables, the API's errors in lines, the
progress bar, and a campaign's verdicts read as a CI job reads them."""

import ast
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from benchlab_cli.commands.campaigns import campaign_text, judge, progress_line
from benchlab_cli.errors import Exit
from benchlab_cli.http import api_message, refusal
from benchlab_cli.output import duration, size, table
from benchlab_cli.progress import ProgressBar, bar_line, wait_for
from benchlab_cli.verdicts import has_ended, not_done_runs, slower

CLI = Path(__file__).resolve().parents[3] / "cli" / "src" / "benchlab_cli"


def test_the_package_imports_only_the_standard_library_and_itself() -> None:
    """It speaks the API only: no Django, nothing of runs/, nothing to install beside it."""
    imported = set()
    for path in CLI.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    assert "benchlab_cli" in imported
    assert imported - {"benchlab_cli"} <= sys.stdlib_module_names, imported - sys.stdlib_module_names


def test_a_table_aligns_text_left_and_numbers_right() -> None:
    shown = table(("id", "name", "memory"), [[1, "lab1", None], [12, "lab-two", True]])
    assert shown.splitlines() == ["id  name     memory", " 1  lab1     -", "12  lab-two  yes"]


def test_sizes_and_durations_read_as_people_say_them() -> None:
    assert (size(16 * 2**30), size(512), size(None)) == ("16.0 GiB", "512 B", None)
    assert [duration(s) for s in (None, 4.4, 95, 4000)] == ["?", "4s", "1m35s", "1h06m"]


def test_the_apis_field_errors_become_one_line_each_with_their_path() -> None:
    body = {"scale": ["A valid integer is required."], "base": {"clients": ["Too many."]}, "detail": "x"}
    assert api_message(body) == "  scale: A valid integer is required.\n  base.clients: Too many.\n  detail: x"
    assert api_message({"detail": "Authentication credentials were not provided."}) == (
        "Authentication credentials were not provided."
    )
    assert api_message(["nothing left to cancel"]) == "nothing left to cancel"
    said = refusal(400, b'{"clients": ["Ensure this value is at least 1."]}', "POST", "http://x/api/runs/")
    assert str(said) == "refused (400): clients: Ensure this value is at least 1." and said.code == Exit.API
    assert "(401)" in str(refusal(401, b'{"detail": "Invalid token."}', "GET", "u"))
    assert str(refusal(502, b"<html>bad gateway</html>", "GET", "http://x/api/hosts/")).startswith(
        "benchlab failed (502)"
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_is_drawn_in_place_on_a_terminal_and_not_at_all_elsewhere() -> None:
    assert bar_line(3, 8, "run 45 measuring (clients=2)", 80) == (
        "[#########...............] 3/8 ended · run 45 measuring (clients=2) · ETA 1m20s"
    )
    assert bar_line(8, 8, "", 0) == "[########################] 8/8 ended"
    terminal, pipe = Terminal(), io.StringIO()
    readings = iter([1, 2, 2, 3])
    ended = wait_for(lambda: next(readings), lambda n: n == 3, lambda n: f"{n}/3", interval_s=0.001, timeout_s=None,
                     out=terminal)  # fmt: skip
    assert ended == 3 and terminal.getvalue() == "\r\x1b[K1/3\r\x1b[K2/3\r\x1b[K3/3\n"  # the repeated 2/3 once
    wait_for(lambda: 1, lambda n: True, lambda n: "drawn?", interval_s=0.001, timeout_s=None, out=pipe)
    assert pipe.getvalue() == ""
    bar = ProgressBar(terminal)
    bar.close()  # nothing drawn: no newline either


def test_waiting_gives_up_after_the_timeout_with_its_exit_code() -> None:
    with pytest.raises(Exception, match=r"gave up waiting after 0s \(--timeout\)") as gave_up:
        wait_for(lambda: 1, lambda n: False, str, interval_s=0.01, timeout_s=0.05, out=io.StringIO())
    assert getattr(gave_up.value, "code", None) == Exit.TIMEOUT == 5


def _campaign(verdict: str, states: list[str], repeating: bool = False) -> dict[str, Any]:
    """A campaign as GET /api/campaigns/ID/ gives it: two configurations, the second judged."""
    runs = [{"id": 10 + i, "repetition": 1, "state": state} for i, state in enumerate(states)]
    finished = sum(state in ("done", "failed", "cancelled") for state in states)
    by_state: dict[str, int] = {}
    for state in states:
        by_state[state] = by_state.get(state, 0) + 1
    comparison = {"verdict": verdict, "text": f"{verdict}: -9.0 % (p = 0.001)"}
    row = {"summary": {"n": 3, "mean": 1000.0}, "confounded": None}
    return {
        "id": 7, "name": "fs", "baseline": 0,
        "progress": {"total": len(states), "finished": finished, "by_state": by_state, "eta_s": 42.0},
        "configurations": [
            {"index": 0, "label": "filesystem=ext4", "runs": runs[:1], "adaptive": None},
            {"index": 1, "label": "filesystem=xfs", "runs": runs[1:], "adaptive": {"repeating": repeating}},
        ],
        "statistics": {"steady_tps": {"label": "steady tps", "unit": "tps", "rows": [
            row | {"configuration": 0, "comparison": None},
            row | {"configuration": 1, "comparison": comparison},
        ]}},
    }  # fmt: skip


def test_a_slower_verdict_fails_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    campaign = _campaign("slower", ["done", "done"])
    assert [v.configuration for v in slower(campaign)] == ["filesystem=xfs"]
    assert slower(campaign, ["latency_p95_ms"]) == []
    assert judge(campaign, fail_on_slower=False, fail_on_failed=True, metrics=None) == Exit.OK
    assert judge(campaign, fail_on_slower=True, fail_on_failed=False, metrics=None) == Exit.VERDICT == 1
    assert "slower: steady_tps, filesystem=xfs: slower: -9.0 % (p = 0.001)" in capsys.readouterr().err
    assert judge(_campaign("faster", ["done", "done"]), fail_on_slower=True, fail_on_failed=False, metrics=None) == 0
    shown = campaign_text(campaign, None)
    assert (
        "filesystem=xfs   3  1000  slower: -9.0 % (p = 0.001)" in shown
        and "filesystem=ext4  3  1000  baseline" in shown
    )


def test_failed_runs_fail_when_asked_and_an_unfinished_campaign_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    campaign = _campaign("within noise", ["done", "failed", "measuring"])
    assert not_done_runs(campaign) == [(11, "failed", "filesystem=xfs")]
    assert judge(campaign, fail_on_slower=False, fail_on_failed=True, metrics=None) == Exit.VERDICT
    err = capsys.readouterr().err
    assert "run 11 failed (filesystem=xfs)" in err and "campaign 7 has not ended" in err
    assert progress_line(campaign).endswith("2/3 ended · run 12 measuring (filesystem=xfs) · ETA 42s")


def test_a_campaign_has_ended_when_every_run_has_and_no_round_is_coming() -> None:
    assert has_ended(_campaign("slower", ["done", "done"]))
    assert not has_ended(_campaign("slower", ["done", "queued"]))
    assert not has_ended(_campaign("slower", ["done", "done"], repeating=True))  # an adaptive round follows
    assert has_ended(_campaign("slower", ["done", "cancelled"], repeating=True))  # a cancel stops the rounds
