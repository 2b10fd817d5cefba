"""Whether benchlab's own database and Redis let the run user in without credentials.

A run on benchlab's own server executes an operator's pgbench script and PostgreSQL settings as
RUN_USER there. Those are checked (pgbench_script.py, pg_settings.py), but if a future hole let
that user run something of its own, it must find nothing to take: benchlab's PostgreSQL and
Redis must ask it for a password it does not have. This module asks them, as that user, the
way any local process could: the first message of each protocol, no credentials.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from runs.lab.errors import LabError
from runs.lab.host.run_user import RUN_USER, ensure_run_user, run_as_run_user
from runs.lab.transport.interface import Transport

POSTGRESQL, REDIS = "PostgreSQL", "Redis"


@dataclass(frozen=True)
class ServiceAddress:
    """One way to reach one of benchlab's services: a TCP port or a unix socket."""

    kind: str  # POSTGRESQL or REDIS
    host: str = ""  # a TCP host; "" with a socket
    port: int = 0
    socket: str = ""  # a unix socket's path
    database: str = ""  # PostgreSQL: the database and role asked for
    user: str = ""

    @property
    def label(self) -> str:
        where = self.socket or f"{self.host}:{self.port}"
        return f"{self.kind} at {where}" + (f" (role {self.user}, database {self.database})" if self.user else "")


@dataclass(frozen=True)
class Answer:
    address: ServiceAddress
    verdict: str  # "open": in without a password; "closed": asked for one or refused; "unreachable"
    detail: str


# Runs as RUN_USER with python3 -I (no site, no environment): for PostgreSQL, a StartupMessage of
# protocol 3.0; AuthenticationOk (R, code 0) means it was let in with no password. For Redis, PING:
# +PONG means it answers anyone. Nothing else is sent; each connection is closed at once.
_ASK = r"""
import json, socket, struct, sys
def connect(a):
    if a["socket"]:
        s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(a["socket"]); return s
    return socket.create_connection((a["host"], a["port"]), timeout=5)
def read_until(s, done):
    data = b""
    while not done(data):
        chunk = s.recv(4096)
        if not chunk: break
        data += chunk
    return data
def ask(a):
    try:
        s = connect(a)
    except OSError as e:
        return "unreachable", str(e)
    with s:
        try:
            if a["kind"] == "PostgreSQL":
                body = struct.pack("!i", 196608)
                body += b"user\0" + a["user"].encode() + b"\0database\0" + a["database"].encode() + b"\0\0"
                s.sendall(struct.pack("!i", len(body) + 4) + body)
                reply = read_until(s, lambda d: len(d) >= 9)
                if reply[:1] == b"R" and len(reply) >= 9 and struct.unpack("!i", reply[5:9])[0] == 0:
                    return "open", "authenticated without a password"
                if reply[:1] == b"R":
                    return "closed", "asked for a password"
                return "closed", reply[5:200].replace(b"\0", b" ").decode("utf-8", "replace").strip()
            s.sendall(b"PING\r\n")
            reply = read_until(s, lambda d: b"\r\n" in d).decode("utf-8", "replace").strip()
            return ("open" if reply.startswith("+PONG") else "closed"), reply[:200]
        except OSError as e:
            return "closed", str(e)
print(json.dumps([ask(a) for a in json.loads(sys.argv[1])]))
"""


def ask_as_run_user(transport: Transport, addresses: Sequence[ServiceAddress]) -> list[Answer]:
    """Each address asked, as RUN_USER on the host (made if missing), without credentials."""
    ensure_run_user(transport)
    wire = [a.__dict__ for a in addresses]
    result = run_as_run_user(transport, ["python3", "-I", "-c", _ASK, json.dumps(wire)], check=False, timeout=60)
    if result.exit_status != 0:
        raise LabError(
            f"cannot check as {RUN_USER} on {transport.label} whether benchlab's database and Redis refuse it "
            f"(python3 -I exited {result.exit_status}: {result.stderr.strip()[-300:]})"
        )
    return [
        Answer(address, verdict, detail)
        for address, (verdict, detail) in zip(addresses, json.loads(result.stdout), strict=True)
    ]


def assert_services_refuse_run_user(transport: Transport, addresses: Sequence[ServiceAddress]) -> None:
    """Refuse the run, naming the fix, if the run user gets into any of benchlab's services."""
    open_ = [answer for answer in ask_as_run_user(transport, addresses) if answer.verdict == "open"]
    if not open_:
        return
    kinds = {answer.address.kind for answer in open_}
    fixes = []
    if POSTGRESQL in kinds:
        fixes.append(
            "give PostgreSQL password authentication (pg_hba.conf: scram-sha-256 on host lines, peer on local "
            "lines, no trust) and reload it"
        )
    if REDIS in kinds:
        fixes.append("give Redis a password (requirepass) and put it in REDIS_URL (redis://:password@host:port/0)")
    raise LabError(
        f"refused: a run on {transport.label}, benchlab's own server, would run as {RUN_USER}, and "
        f"{'; '.join(answer.address.label for answer in open_)} let {RUN_USER} in without a password. "
        f"Fix: {'; '.join(fixes)}; or run benchmarks on another host (SECURITY.md, runs on benchlab's own server)."
    )
