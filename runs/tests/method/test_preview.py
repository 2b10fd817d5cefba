"""A campaign preview's method warnings, once per check with the configurations' numbers, and its
hosts as last read. Pure."""

from datetime import timedelta

from django.utils import timezone

from runs.method.preview import PROBE, RUN, HostAsRead, preview_warnings
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
        3: spec(server_host_id=1, client_host_ids=(3,), duration_s=600, scale=3200),
    }
    now = timezone.now()
    hosts = {
        1: HostAsRead("lab1", RUN, now - timedelta(hours=2), 7, ()),  # read, nothing found: no warning
        2: HostAsRead("lab2", PROBE, now - timedelta(minutes=3), found=("CPU frequency governor powersave",)),
        3: HostAsRead("lab3", RUN, now - timedelta(hours=2, minutes=5), 7, ("yes (PID 9) took 99 % CPU",)),
    }

    warnings = preview_warnings(specs, {1: 24 * GIB, 2: 24 * GIB}, hosts)

    assert [(w.key, w.title, w.configurations, w.reason) for w in warnings] == [
        ("host-2", "The host as last read", "#2", "lab2: CPU frequency governor powersave (probed 3\xa0minutes ago)"),
        ("host-3", "The host as last read", "#3", "lab3: yes (PID 9) took 99 % CPU (by its run 7, 2\xa0hours ago)"),
    ]  # a client host warns for the configurations it drives


def test_a_host_never_probed_nor_run_is_on_the_checklist_as_not_known() -> None:
    hosts = {1: HostAsRead("lab1", "")}

    warnings = preview_warnings({1: spec(duration_s=600, scale=3200)}, {1: 24 * GIB}, hosts)

    assert [(w.key, w.reason, w.advice) for w in warnings] == [
        (
            "host-1",
            "lab1: never probed nor run: its CPU settings and load are not known",
            "press “Check the hosts now” to read it before queueing",
        )
    ]
    assert hosts[1].when == "never probed nor run"


def test_when_a_host_was_read_is_said_in_words_and_a_clock_ahead_is_not_hidden() -> None:
    now = timezone.now()
    ahead = now + timedelta(hours=2)

    assert HostAsRead("lab1", PROBE, now - timedelta(seconds=20)).when == "probed less than a minute ago"
    assert HostAsRead("lab1", PROBE, now + timedelta(seconds=20)).when == "probed less than a minute ago"
    assert HostAsRead("lab1", RUN, now - timedelta(days=3, hours=5), 12).when == "by its run 12, 3\xa0days ago"
    assert HostAsRead("lab1", PROBE, ahead).when == f"probed at {ahead:%Y-%m-%d %H:%M} UTC"
