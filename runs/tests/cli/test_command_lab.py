"""`benchlab campaigns create --wait` and `benchlab runs queue --wait` through a real worker on the
virtual lab (small runs on its RAM disk): the wait loop sees the campaign end, draws its bar on a
terminal, and the finished campaign's exports and verdicts come back as a CI job reads them."""

import csv
import io
import json
import os
import pty
import subprocess
import threading
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from runs.accounts.services.tokens import token_create
from runs.management.commands.lab_register import lab_host_name
from runs.models import Campaign, Host, Run, RunState
from runs.tests.cli.command import BENCHLAB, benchlab
from runs.tests.factories import make_user
from runs.tests.virtual_lab import PG_BIN, VirtualLab

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _ram_disk_run(virtual_lab: VirtualLab) -> dict[str, Any]:
    """A run of two seconds on lab1's RAM disk, as POST /api/runs/ takes it."""
    call_command("lab_register", "--id", str(virtual_lab.lab_id), stdout=StringIO())
    host = Host.objects.get(name=lab_host_name(virtual_lab.lab_id, "lab1"))
    ram, install = host.devices.get(name="ram"), host.pg_installs.get(bin_dir=PG_BIN)
    return {"server_host": host.pk, "device": ram.pk, "pg_install": install.pk, "filesystem": "ext4", "scale": 1,
            "clients": 1, "threads": 1, "duration_s": 2, "warmup_s": 0, "log_sampling_rate": None}  # fmt: skip


def _with_stderr_on_a_terminal(args: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str, str]:
    """Run `args` with stderr on a pseudo-terminal (as a person's shell has it): its exit code,
    its stdout, and what it drew on the terminal."""
    leader, follower = pty.openpty()
    drawn: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's last writer has closed it
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=follower)
        os.close(follower)
        stdout, _ = process.communicate(timeout=timeout_s)
    finally:
        reader.join(timeout=10)
        os.close(leader)
    return process.returncode, stdout.decode(), b"".join(drawn).decode(errors="replace")


def test_campaigns_create_waits_for_the_end_drawing_its_progress(
    virtual_lab: VirtualLab, web_server: str, tmp_path: Path
) -> None:
    base = _ram_disk_run(virtual_lab)
    otto = make_user("otto", "operator")
    token = token_create(user=otto, name="ci")[1]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"name": "from a shell", "base": base, "repetitions": 1,
                                "variables": [{"field": "clients", "values": [1, 2]}]}))  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BENCHLAB_URL": web_server, "BENCHLAB_TOKEN": token}

    code, stdout, drawn = _with_stderr_on_a_terminal(
        [str(BENCHLAB), "campaigns", "create", "--from", str(plan), "--wait", "--json", "--fail-on-failed",
         "--interval", "0.5", "--timeout", "240"],
        env, timeout_s=300,
    )  # fmt: skip

    campaign = Campaign.objects.get()
    runs = Run.objects.filter(campaign=campaign)
    assert code == 0, (drawn, [(run.pk, run.state, run.error) for run in runs])
    assert [run.state for run in runs] == [RunState.DONE, RunState.DONE]
    printed = json.loads(stdout)  # the final campaign, as GET /api/campaigns/ID/ gives it
    assert printed["id"] == campaign.pk
    assert printed["progress"] | {"eta_s": None} == {"total": 2, "finished": 2, "by_state": {"done": 2}, "eta_s": None}
    frames = drawn.split("\r\x1b[K")[1:]  # each redraw of the bar
    assert frames[0].startswith("[........................] 0/2 ended"), frames
    assert frames[-1].startswith("[########################] 2/2 ended"), frames
    assert any(" · run " in frame for frame in frames), frames  # the run under way was named

    exported = benchlab("export", "campaign", str(campaign.pk), "--csv", url=web_server, token=token, home=tmp_path)
    judged = benchlab("campaigns", "show", str(campaign.pk), "--fail-on-slower", "--fail-on-failed", url=web_server,
                      token=token, home=tmp_path)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert [row[0] for row in csv.reader(io.StringIO(exported.stdout))] == ["clients", "1 clients", "2 clients"]
    assert judged.returncode == 0, judged.stderr  # one run each: too few to call anything slower
    assert "too few runs" in judged.stdout


def test_runs_queue_waits_for_the_run_and_exits_0_when_it_is_done(
    virtual_lab: VirtualLab, web_server: str, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_ram_disk_run(virtual_lab)))
    token = token_create(user=make_user("otto", "operator"), name="ci")[1]

    waited = benchlab("runs", "queue", "--from", str(spec), "--wait", "--json", "--interval", "0.5",
                      url=web_server, token=token, home=tmp_path, timeout_s=180)  # fmt: skip

    run = Run.objects.get()
    assert waited.returncode == 0, (waited.stderr, run.state, run.error)
    assert json.loads(waited.stdout)["state"] == "done" == run.state and run.steady_tps_mean
    assert waited.stderr == ""  # not a terminal: no bar
