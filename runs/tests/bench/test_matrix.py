"""A campaign's matrix: expansion of the base and the variables, each combination checked like a
run queued by hand (invalid ones refused with their reason), and the interleaved queue order."""

import pytest

from runs.bench.spec_checks import Inventory
from runs.bench.specs import RunSpec
from runs.campaigns.matrix import MatrixError, Variable, expand, run_order, variables_from_json
from runs.models import Host
from runs.tests.factories import make_device, make_host, make_pg_install

pytestmark = pytest.mark.django_db


def lab() -> tuple[Host, Host]:
    lab1, lab2 = make_host(name="lab1", address="10.200.0.11"), make_host(name="lab2", address="10.200.0.12")
    for host, index in ((lab1, 1), (lab2, 2)):
        make_device(host, name="hdd", kind="hdd", path=f"/dev/disk/by-id/ata-HDD_{index}", wipe_allowed=True)
        make_device(host, name="ram", kind="ram", path=f"/dev/disk/by-id/ram-{index}", wipe_allowed=True)
        make_pg_install(host)
    return lab1, lab2


def base_on(host: Host, **changes: object) -> RunSpec:
    device = host.devices.get(name="hdd")
    spec = RunSpec(
        server_host_id=host.pk, device_id=device.pk, filesystem="ext4", pg_install_id=host.pg_installs.get().pk,
        scale=1, clients=2, threads=1, duration_s=5,
    )  # fmt: skip
    return spec.replace(**changes)


def test_the_matrix_is_every_combination_first_variable_slowest() -> None:
    lab1, _ = lab()
    ram, hdd = lab1.devices.get(name="ram"), lab1.devices.get(name="hdd")
    variables = [Variable("device", (ram.pk, hdd.pk)), Variable("mount_options", ("noatime", "(none)"))]

    cells = expand(base_on(lab1), variables, Inventory.load())

    assert [cell.label for cell in cells] == [
        "lab1:ram · noatime",
        "lab1:ram · default mount options",
        "lab1:hdd · noatime",
        "lab1:hdd · default mount options",
    ]
    assert all(cell.valid for cell in cells)
    assert [(c.spec.device_id, c.spec.mount_options) for c in cells] == [
        (ram.pk, "noatime"), (ram.pk, ""), (hdd.pk, "noatime"), (hdd.pk, ""),
    ]  # fmt: skip
    # Each configuration differs from the base only in what was swept.
    assert cells[1].spec.differences(base_on(lab1)) == ("device_id",)


def test_a_device_on_another_host_moves_the_run_there_with_that_hosts_install() -> None:
    lab1, lab2 = lab()
    other = lab2.devices.get(name="ram")

    (cell,) = expand(base_on(lab1), [Variable("device", (other.pk,))], Inventory.load())

    assert cell.valid
    assert (cell.spec.server_host_id, cell.spec.pg_install_id) == (lab2.pk, lab2.pg_installs.get().pk)


def test_invalid_combinations_are_refused_with_their_reason() -> None:
    lab1, _ = lab()
    variables = [
        Variable("filesystem", ("ext4", "tmpfs", "btrfs")),
        Variable("mkfs_options", ("-b 4096",)),
        Variable("mount_options", ("data=writeback",)),
    ]

    cells = {cell.label: cell for cell in expand(base_on(lab1), variables, Inventory.load())}

    assert cells["ext4 · -b 4096 · data=writeback"].valid
    assert "mkfs_options" in cells["tmpfs · -b 4096 · data=writeback"].errors
    btrfs = cells["btrfs · -b 4096 · data=writeback"]
    assert not btrfs.valid and any("data" in reason for reason in btrfs.reasons())


def test_an_install_not_on_the_devices_host_is_refused() -> None:
    lab1, lab2 = lab()
    variables = [Variable("pg_install", (lab1.pg_installs.get().pk, lab2.pg_installs.get().pk))]

    first, second = expand(base_on(lab1), variables, Inventory.load())

    assert first.valid
    assert second.errors["pg_install"] == [f"{lab2.pg_installs.get()} is not installed on lab1."]


def test_clients_take_threads_and_keep_threads_at_most_clients() -> None:
    lab1, _ = lab()

    cells = expand(base_on(lab1, threads=2), [Variable("clients", ("1", "8/4", "16"))], Inventory.load())

    assert [(c.spec.clients, c.spec.threads) for c in cells] == [(1, 1), (8, 4), (16, 2)]
    assert [c.label for c in cells] == ["1 clients/1 threads", "8 clients/4 threads", "16 clients/2 threads"]


def test_settings_values_become_setting_lines() -> None:
    lab1, _ = lab()

    (cell,) = expand(
        base_on(lab1), [Variable("pg_settings", ("shared_buffers = 64MB; work_mem=4MB",))], Inventory.load()
    )

    assert cell.valid and cell.spec.pg_settings == "shared_buffers = 64MB\nwork_mem=4MB"


def test_the_same_run_twice_is_refused_as_a_duplicate() -> None:
    lab1, _ = lab()

    first, second = expand(base_on(lab1), [Variable("mount_options", ("", "(none)"))], Inventory.load())

    assert first.valid and second.errors == {"__all__": ["the same run as default mount options"]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"field": "colour", "values": ["red"]}], "'colour' cannot be swept"),
        ([{"field": "scale", "values": []}], "scale has no values"),
        ([{"field": "scale", "values": [1, 1]}], "scale lists a value twice"),
        ([{"field": "scale", "values": [1]}, {"field": "scale", "values": [2]}], "scale is given twice"),
        ({"field": "scale"}, "variables are a list"),
        ([{"field": "scale", "values": [1], "extra": 1}], "each variable is"),
    ],
)
def test_bad_variables_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(MatrixError, match=message):
        variables_from_json(data)


def test_a_value_that_is_no_number_says_so() -> None:
    lab1, _ = lab()
    with pytest.raises(MatrixError, match="scale: 'ten' is not a whole number"):
        expand(base_on(lab1), [Variable("scale", ("ten",))], Inventory.load())


def test_a_value_of_digits_other_than_ascii_is_no_number() -> None:
    lab1, _ = lab()
    for digits in ("\u0665", "\uff15", "\u0967\u0966"):  # Arabic-Indic 5, fullwidth 5, Devanagari 10
        with pytest.raises(MatrixError, match="is not a whole number"):
            expand(base_on(lab1), [Variable("scale", (digits,))], Inventory.load())


def test_repetitions_are_interleaved_round_by_round() -> None:
    assert run_order(3, 2) == [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]


def test_shuffled_rounds_keep_every_round_complete_and_are_reproducible_from_the_seed() -> None:
    order = run_order(5, 4, seed=1234)

    rounds = [order[i * 5 : (i + 1) * 5] for i in range(4)]
    assert all(sorted(index for index, _ in r) == list(range(5)) for r in rounds)
    assert all({rep for _, rep in r} == {i + 1} for i, r in enumerate(rounds))
    assert order == run_order(5, 4, seed=1234)
    assert [index for index, _ in order] != [index for index, _ in run_order(5, 4)]  # shuffled
