"""A campaign preview's method warnings, once per check with the configurations' numbers. Pure."""

from runs.method.preview import preview_warnings
from runs.tests.method.test_run_checks import GIB, spec


def test_each_check_warns_once_for_the_configurations_it_concerns() -> None:
    specs = {1: spec(scale=10, duration_s=600), 2: spec(scale=3200, duration_s=600), 3: spec(scale=10, duration_s=60)}

    warnings = {w.key: w for w in preview_warnings(specs, {1: 24 * GIB})}

    assert set(warnings) == {"memory", "length"}
    assert (warnings["memory"].numbers, warnings["memory"].configurations) == ((1, 3), "#1 and #3")
    assert warnings["memory"].reason.startswith("fits in RAM: database 150 MiB, shared_buffers 128 MiB, RAM 24 GiB")
    assert warnings["length"].configurations == "#3"


def test_a_campaign_that_varies_the_storage_is_told_what_fitting_in_ram_means() -> None:
    specs = {1: spec(scale=10, device_id=1), 2: spec(scale=10, device_id=2)}

    memory = next(w for w in preview_warnings(specs, {1: 24 * GIB}) if w.key == "memory")

    assert memory.reason.startswith("this campaign compares storage, and these configurations fit in memory")


def test_contention_is_left_to_its_own_box() -> None:
    warnings = preview_warnings({1: spec(scale=1, clients=8, duration_s=600)}, {1: 24 * GIB})

    assert "contention" not in {w.key for w in warnings}


def test_consecutive_configurations_are_named_as_ranges() -> None:
    specs = {n: spec(scale=10, duration_s=60 if n != 4 else 600) for n in range(1, 8)}

    length = next(w for w in preview_warnings(specs, {1: 24 * GIB}) if w.key == "length")

    assert length.configurations == "#1–#3 and #5–#7"


def test_a_host_set_against_stable_numbers_is_on_the_checklist_with_its_configurations() -> None:
    specs = {
        1: spec(server_host_id=1, duration_s=600, scale=3200),
        2: spec(server_host_id=2, duration_s=600, scale=3200),
    }
    said = {2: "lab2: CPU frequency governor powersave (its run 7 found it)"}

    warnings = preview_warnings(specs, {1: 24 * GIB, 2: 24 * GIB}, said)

    assert [(w.title, w.configurations, w.reason) for w in warnings] == [
        ("The host as last measured", "#2", "lab2: CPU frequency governor powersave (its run 7 found it)")
    ]
