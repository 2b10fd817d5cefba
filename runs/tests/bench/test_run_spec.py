"""A run as the lab layer sees it: the benchmark specification built from the database."""

import pytest

from runs.bench.services.lab_specs import benchmark_spec
from runs.models import Host
from runs.models.run_clients import client_pgbench_install
from runs.tests.factories import make_device, make_host, make_pg_install, make_run

pytestmark = pytest.mark.django_db


def client_with_installs(*versions: str) -> Host:
    client = make_host(name="client1", address="10.200.0.12")
    for version in versions:
        make_pg_install(client, bin_dir=f"/opt/pg/{version}/bin", version=version)
    return client


@pytest.mark.parametrize(
    ("server_version", "chosen"),
    [("15.19", "15.20"), ("16.1", "16.4"), ("13.2", "17.0")],
    ids=["same-major-newest", "other-major", "none-of-its-major-newest"],
)
def test_the_client_uses_its_pgbench_of_the_servers_major_version(server_version: str, chosen: str) -> None:
    server = make_host()
    client = client_with_installs("9.6.24", "15.2", "15.20", "16.4", "17.0")

    install = client_pgbench_install(make_pg_install(server, version=server_version), client)

    assert install is not None and install.version == chosen


def test_an_install_whose_version_has_digits_other_than_ascii_is_sorted_not_a_crash() -> None:
    client = client_with_installs("15.20", "15.\u00b2")  # "²" is a digit to str.isdigit(), not to int()

    install = client_pgbench_install(make_pg_install(make_host(), version="15.19"), client)

    assert install is not None and install.version == "15.20"


def test_a_run_with_a_client_host_names_both_addresses() -> None:
    server = make_host()
    client = client_with_installs("15.20")
    run = make_run(server, make_device(server), make_pg_install(server), client_host=client, warmup_s=5,
                   duration_s=20, log_sampling_rate=0.25)  # fmt: skip

    spec = benchmark_spec(run)

    (client_spec,) = spec.clients
    assert (client_spec.address, client_spec.server_address) == ("10.200.0.12", server.address)
    assert (client_spec.pg_bin_dir, client_spec.database) == ("/opt/pg/15.20/bin", "bench")
    assert (spec.run.duration_s, spec.warmup_s, spec.run.log_sampling_rate) == (25, 5, 0.25)


def test_a_run_without_a_client_host_runs_pgbench_on_the_server() -> None:
    server = make_host()

    spec = benchmark_spec(make_run(server, make_device(server), make_pg_install(server)))

    assert spec.clients == ()
