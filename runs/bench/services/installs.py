"""Before a run touches its hosts' storage: the PostgreSQL install it names is still on its server,
and each client host's pgbench on that host. A host rebuilt since its last probe fails the run
here, naming the install and the re-probe that updates the inventory, and not at initdb after a
mkfs."""

from collections.abc import Sequence

from runs.lab.benchmark.run import Endpoint
from runs.lab.errors import LabError
from runs.lab.postgres.installs import CLIENT_PROGRAMS, SERVER_PROGRAMS, missing_programs
from runs.lab.transport.interface import Transport
from runs.models import Host, PgInstall, Run
from runs.models.run_clients import client_pgbench_install


class InstallMissing(LabError):
    """A program the run needs is not in its install's bin directory on the host."""


def _check(transport: Transport, host: Host, install: PgInstall, programs: Sequence[str]) -> None:
    if missing := missing_programs(transport, install.bin_dir, programs):
        raise InstallMissing(
            f"{install} is not on {host.name} any more: {install.bin_dir} has no {', '.join(missing)}. "
            f"Nothing of the run was done on its storage. {host.reprobe_hint} so the inventory "
            "marks the install missing, or install it there again"
        )


def run_installs_present(run: Run, transport: Transport, clients: Sequence[Endpoint]) -> None:
    """InstallMissing unless the server's install has every program a run starts and each
    client host its pgbench."""
    _check(transport, run.server_host, run.pg_install, SERVER_PROGRAMS)
    for client_host, client in zip(run.client_host_list, clients, strict=True):
        install = client_pgbench_install(run.pg_install, client_host)
        if install is not None:  # none: benchmark_spec has said so already
            _check(client.transport, client_host, install, CLIENT_PROGRAMS)
