"""uvicorn (scripts/web) on the test database, as `make run` serves benchlab: for the browser
tests and the benchmarks, with its process id so they can count what it holds (threads,
connections) while it serves."""

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from runs.lab.transport.waiting import wait_until
from runs.tests.workers import database_url_for_tests

ROOT = Path(settings.BASE_DIR)
ESTABLISHED = "01"  # the state column of /proc/net/tcp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class WebServer:
    address: str  # http://127.0.0.1:<port>
    port: int
    pid: int  # uvicorn's own: scripts/web execs it

    def threads(self) -> int:
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))

    def redis_connections(self) -> int:
        return connections_to(self.pid, redis_port())

    def redis_ports(self) -> set[int]:
        """The local ports of this server's connections to Redis (as Redis's CLIENT LIST names them)."""
        return local_ports_to(self.pid, redis_port())

    def database_connections(self) -> int:
        return connections_to(self.pid, int(str(settings.DATABASES["default"].get("PORT") or 5432)))


def redis_port() -> int:
    return urlsplit(settings.REDIS_URL).port or 6379


def connections_to(pid: int, port: int) -> int:
    """Open TCP connections of process `pid` to `port` on any host."""
    return len(local_ports_to(pid, port))


def local_ports_to(pid: int, port: int) -> set[int]:
    """The local ports of process `pid`'s open TCP connections to `port` on any host."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            sockets.add(os.readlink(fd))
        except FileNotFoundError:
            continue  # closed while counted
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if remote_port == port and state == ESTABLISHED and f"socket:[{inode}]" in sockets:
                ports.add(local_port)
    return ports


@contextmanager
def uvicorn(**environment: str) -> Iterator[WebServer]:
    """uvicorn on the test database, with `environment` added to its own (BENCHLAB_QUEUE: where
    it sends tasks); stopped on leaving."""
    port = free_port()
    env = os.environ | {"DATABASE_URL": database_url_for_tests(), "BENCHLAB_BIND": f"127.0.0.1:{port}", **environment}
    process = subprocess.Popen(["scripts/web"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        _wait_until_listening(port)
        yield WebServer(address=f"http://127.0.0.1:{port}", port=port, pid=process.pid)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """uvicorn waits for every request to end before it exits: one that never ends (a stream
    still polling for a viewer who left) fails the test, and the process is killed, not left
    holding the test database."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def answers(address: str, port: int) -> bool:
    """Whether something accepts a TCP connection at address:port now."""
    try:
        socket.create_connection((address, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _wait_until_listening(port: int, timeout_s: float = 30) -> None:
    if not wait_until(lambda: answers("127.0.0.1", port), timeout_s, 0.2):
        raise RuntimeError("uvicorn did not start")
