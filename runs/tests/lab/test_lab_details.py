"""Smaller lab-layer behaviours on the virtual lab: SSH quoting, files and timeouts; tmpfs and
directory storage; unmounting a busy mount; PostgreSQL's own complaints; client hosts."""

import ast
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from runs.lab.errors import CommandFailed, CommandTimeout, ConnectFailed, InvalidOption
from runs.lab.host.run_user import ensure_run_user, run_as_run_user
from runs.lab.postgres.cluster import BENCH_ROLE, parse_settings, psql, throwaway_cluster
from runs.lab.storage.checks import DeviceIdentity
from runs.lab.storage.mounts import is_mounted
from runs.lab.storage.prepare import FilesystemSpec, prepared_storage
from runs.lab.transport.ssh import SSHTransport
from runs.tests.virtual_lab import PG_BIN, VirtualLab

pytestmark = pytest.mark.lab
HOSTILE = ["a b", "it's", '"quoted"', "$(touch /tmp/pwned)", "`id`", "x; rm -rf /nonexistent", "*", "new\nline", ""]


@pytest.fixture
def lab1(virtual_lab: VirtualLab) -> Iterator[SSHTransport]:
    """lab1, with benchlab's run user there (as every run makes sure): conftest's lab1, and more."""
    transport = virtual_lab.connect("lab1")
    ensure_run_user(transport)
    yield transport
    transport.close()


def test_arguments_reach_the_remote_program_unchanged(lab1: SSHTransport) -> None:
    result = lab1.run(["printf", "%s\\0", *HOSTILE])

    assert result.stdout.split("\0")[:-1] == HOSTILE
    assert lab1.run(["test", "-e", "/tmp/pwned"], check=False).exit_status == 1


def test_a_remote_command_runs_in_the_given_directory_and_reads_stdin(lab1: SSHTransport) -> None:
    assert lab1.run(["pwd"], cwd="/var/tmp").stdout.strip() == "/var/tmp"
    assert lab1.run(["tr", "a-z", "A-Z"], stdin=b"pgbench\n").stdout == "PGBENCH\n"


def test_a_file_is_written_over_sftp_whole_and_with_its_mode(lab1: SSHTransport) -> None:
    content = bytes(range(256)) * 100  # every byte value: nothing is decoded on the way

    lab1.write_file("/tmp/benchlab-sftp-test", content, mode=0o600)
    try:
        mode = lab1.run(["stat", "-c", "%a", "/tmp/benchlab-sftp-test"]).stdout.strip()
        digest = lab1.run(["sha256sum", "/tmp/benchlab-sftp-test"]).stdout.split()[0]
    finally:
        lab1.run(["rm", "/tmp/benchlab-sftp-test"])

    assert (mode, digest) == ("600", hashlib.sha256(content).hexdigest())


def test_connecting_where_nothing_listens_fails_within_the_timeout(virtual_lab: VirtualLab) -> None:
    began = time.monotonic()
    with pytest.raises(ConnectFailed, match="cannot connect"):
        SSHTransport(virtual_lab.target("lab1", port=2222, connect_timeout=3))
    assert time.monotonic() - began < 5


def test_a_remote_command_that_takes_too_long_times_out_and_is_stopped_on_the_host(lab1: SSHTransport) -> None:
    pid_file = "/tmp/benchlab-timeout-test.pid"
    with pytest.raises(CommandTimeout, match="did not finish within 1 s"):
        lab1.run(["sh", "-c", 'echo $$ > "$1"; exec sleep 30', "sh", pid_file], timeout=1)

    pid = lab1.run(["cat", pid_file]).stdout.strip()
    lab1.run(["rm", pid_file])
    deadline = time.monotonic() + 10
    while lab1.run(["kill", "-0", pid], check=False).exit_status == 0:
        assert time.monotonic() < deadline, "the timed-out command still runs on the host"
        time.sleep(0.2)


@pytest.mark.parametrize(
    "filesystem", [FilesystemSpec("tmpfs", mount_options=("size=256m",)), FilesystemSpec("directory")]
)
def test_tmpfs_and_directory_storage_need_no_mkfs_and_are_cleaned_up(
    lab1: SSHTransport, filesystem: FilesystemSpec
) -> None:
    device = DeviceIdentity(path="/var/tmp/benchlab-dir-device")  # not wipeable: nothing is formatted
    lab1.run(["mkdir", "-p", device.path])
    try:
        with prepared_storage(lab1, device, filesystem, f"no-mkfs-{filesystem.fstype}") as storage:
            lab1.run(["touch", f"{storage.mountpoint}/file"])
            if filesystem.fstype == "tmpfs":
                assert "size=262144k" in storage.mount_options
                assert is_mounted(lab1, storage.mountpoint)
        assert lab1.run(["test", "-e", storage.mountpoint], check=False).exit_status == 1
    finally:
        lab1.run(["rmdir", device.path])


def test_a_directory_device_linking_into_a_system_directory_is_refused_after_resolving_the_link(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    link = f"/var/tmp/benchlab-lab{virtual_lab.lab_id}-link-to-etc"
    lab1.run(["ln", "-sfn", "/etc", link])
    try:
        with pytest.raises(InvalidOption, match=r"^/etc is a system directory"):
            with prepared_storage(lab1, DeviceIdentity(path=link), FilesystemSpec("directory"), "linked"):
                pass
        created = lab1.run(["test", "-e", "/etc/benchlab-linked"], check=False).exit_status == 0
    finally:
        lab1.run(["rm", "-f", link])
    assert not created


def test_a_directory_device_holding_benchlabs_own_data_is_refused(virtual_lab: VirtualLab, lab1: SSHTransport) -> None:
    directory = f"/var/tmp/benchlab-lab{virtual_lab.lab_id}-checkout"
    device = DeviceIdentity(path=directory, protected_dirs=(f"{directory}/var",))
    lab1.run(["mkdir", "-p", f"{directory}/var"])
    try:
        with pytest.raises(InvalidOption, match="holds benchlab's own data"):
            with prepared_storage(lab1, device, FilesystemSpec("directory"), "own-data"):
                pass
    finally:
        lab1.run(["rm", "-rf", directory])


def test_a_block_filesystem_on_a_directory_device_is_refused(lab1: SSHTransport) -> None:
    with pytest.raises(InvalidOption, match="needs a block device"):
        with prepared_storage(lab1, DeviceIdentity(path="/var/tmp"), FilesystemSpec("ext4"), "nope"):
            pass


def start_sleeper(transport: SSHTransport, directory: str, as_run_user: bool) -> int:
    argv = ["sh", "-c", 'cd "$1" && setsid sleep 600 >/dev/null 2>&1 & echo $!', "sh", directory]
    started = run_as_run_user(transport, argv) if as_run_user else transport.run(argv)
    return int(started.stdout.strip())


def test_a_busy_mount_is_unmounted_after_stopping_our_own_process(virtual_lab: VirtualLab, lab1: SSHTransport) -> None:
    with prepared_storage(lab1, virtual_lab.disk("lab1", "ram"), FilesystemSpec("ext4"), "busy") as storage:
        pid = start_sleeper(lab1, storage.mountpoint, as_run_user=True)
        storage.own_pids.append(pid)

    assert not is_mounted(lab1, storage.mountpoint)
    assert lab1.run(["kill", "-0", str(pid)], check=False).exit_status != 0


def test_a_forged_pid_among_the_runs_own_reaches_no_process_but_the_run_users(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    # The run's PIDs come from files its user writes: a PID planted there (root's sshd, say)
    # must survive the cleanup that stops the run's own processes.
    bystander = start_sleeper(lab1, "/", as_run_user=False)  # root's
    try:
        with prepared_storage(lab1, virtual_lab.disk("lab1", "ram"), FilesystemSpec("ext4"), "forged") as storage:
            own = start_sleeper(lab1, storage.mountpoint, as_run_user=True)  # keeps the mount busy
            storage.own_pids.extend([bystander, own])

        assert not is_mounted(lab1, storage.mountpoint)
        assert lab1.run(["kill", "-0", str(own)], check=False).exit_status != 0
        assert lab1.run(["kill", "-0", str(bystander)], check=False).exit_status == 0
    finally:
        lab1.run(["kill", "-KILL", str(bystander)], check=False)


def test_a_bad_postgresql_setting_fails_with_postgresqls_own_message(
    virtual_lab: VirtualLab, lab1: SSHTransport
) -> None:
    with prepared_storage(lab1, virtual_lab.disk("lab1", "ram"), FilesystemSpec("ext4"), "badconf") as storage:
        with pytest.raises(CommandFailed) as failure:
            # Allowed by benchlab (PostgreSQL lists it), refused by a Linux build of PostgreSQL itself.
            settings = parse_settings("wal_sync_method = fsync_writethrough")
            with throwaway_cluster(lab1, PG_BIN, f"{storage.mountpoint}/pg", settings):
                pass

    assert 'invalid value for parameter "wal_sync_method": "fsync_writethrough"' in str(failure.value)


def test_a_client_host_reaches_the_cluster_over_tcp(virtual_lab: VirtualLab, lab1: SSHTransport) -> None:
    lab2 = virtual_lab.connect("lab2")
    client = virtual_lab.host("lab2")["address"]
    try:
        with prepared_storage(lab1, virtual_lab.disk("lab1", "ram"), FilesystemSpec("ext4"), "tcp") as storage:
            with throwaway_cluster(lab1, PG_BIN, f"{storage.mountpoint}/pg", {}, [client], storage.own_pids) as cluster:
                psql(lab1, cluster, f"CREATE ROLE {BENCH_ROLE} LOGIN")
                server = virtual_lab.host("lab1")["address"]
                query = [f"{PG_BIN}/psql", "-h", server, "-p", str(cluster.port), "-d", "postgres", "-AtXc"]
                answer = lab2.run([*query, "SELECT inet_client_addr()", "-U", BENCH_ROLE])
                as_superuser = lab2.run([*query, "SELECT 1", "-U", "postgres"], check=False)
                assert answer.stdout.strip() == client
                assert psql(lab1, cluster, "SHOW listen_addresses") == "*"
    finally:
        lab2.close()

    # The client host is let in as pgbench's role only, never as the superuser.
    assert as_superuser.exit_status != 0
    assert 'no pg_hba.conf entry for host "' + client + '", user "postgres"' in as_superuser.stderr


def test_the_lab_layer_imports_nothing_from_django() -> None:
    """Nor anything of benchlab outside runs.lab: it is handed what it needs (ARCHITECTURE.md)."""
    modules = sorted((Path(settings.BASE_DIR) / "runs" / "lab").rglob("*.py"))
    assert len(modules) > 40  # every sub-package was read
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                outside = name.startswith("runs") and not name.startswith("runs.lab")
                assert not name.startswith("django") and not outside, f"{module} imports {name}"
