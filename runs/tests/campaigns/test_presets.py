"""Presets against a made-up inventory: the host(s) the user chooses (or a default the description
names), scales in the seeds' memory tiers that fit the chosen devices, scale ≥ clients for the
TPC-B-like workloads, the refusal of a host that cannot run, and the preview's warning when a
user-made campaign has fewer branch rows than clients."""

from itertools import product
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.campaigns.plans import PresetInvalid, preset_plan
from runs.campaigns.preset_hosts import PresetRefused
from runs.campaigns.preset_sizing import clients_within, tier_label
from runs.campaigns.presets import preset_initial
from runs.models import Host
from runs.tests.conftest import ClientFactory
from runs.tests.factories import make_device, make_host, make_pg_install, run_form_fields

pytestmark = pytest.mark.django_db
GIB = 2**30
TPCB = ("tpcb-like", "simple-update")


def server(
    name: str, memory_gib: float | None, cores: int, devices: dict[str, tuple[str, float]], **fields: Any
) -> Host:
    """A host serving PostgreSQL 15.19 (8 kB) with RAM, cores and wipeable devices {name: (kind, GiB)}."""
    memory = int(memory_gib * GIB) if memory_gib else None
    fields = {"address": f"10.200.0.{sum(map(ord, name)) % 250}"} | fields
    host = make_host(name=name, memory_bytes=memory, cpu_cores=cores, **fields)
    for device, (kind, size) in devices.items():
        make_device(host, name=device, kind=kind, path=f"/dev/disk/by-id/{name}-{device}", wipe_allowed=True,
                    capacity_bytes=int(size * GIB))  # fmt: skip
    make_pg_install(host, version="15.19", block_size=8192)
    return host


@pytest.fixture
def otto(client_for: ClientFactory) -> Client:
    return client_for("otto")


@pytest.fixture
def lab() -> dict[str, Host]:
    """A big server, a smaller one, a virtual-lab-like one (loop devices smaller than its RAM), and
    three that cannot run a preset: disabled, client-only, and benchlab's own server."""
    return {
        "big": server("big", 64, 16, {"hdd": ("hdd", 4096), "ssd": ("ssd", 2048), "ram": ("ram", 32)}),
        "mid": server("mid", 16, 4, {"hdd": ("hdd", 1024), "ssd": ("ssd", 500)}),
        "vlab": server("vlab", 24, 2, {"hdd": ("hdd", 1), "ram": ("ram", 0.75), "ssd": ("ssd", 2)}),
        "off": server("off", 8, 2, {"ssd": ("ssd", 100)}, enabled=False),
        "client": server("client", 8, 2, {}, serves_postgres=False),
        "self": server("self", 8, 2, {"ssd": ("ssd", 100)}, address="127.0.0.1"),
    }


def configurations(initial: dict[str, Any]) -> list[tuple[int, int]]:
    """(scale, clients) of every configuration the preset's sweep makes."""
    sweep, base = initial["matrix"], initial["base"]
    scales = [int(s) for s in str(sweep.get("scale", base["scale"])).split(",")]
    clients = [int(c) for c in str(sweep.get("clients", base["clients"])).split(",")]
    return list(product(scales, clients))


def assert_scale_at_least_clients(initial: dict[str, Any]) -> None:
    if initial["base"]["workload"] in TPCB:
        assert all(scale >= clients for scale, clients in configurations(initial)), configurations(initial)


def test_ssd_vs_hdd_runs_on_the_chosen_host_with_a_scale_in_each_memory_tier(lab: dict[str, Host]) -> None:
    big = lab["big"]

    initial = preset_initial("ssd-vs-hdd", [big.pk])

    assert initial["hosts"] == [big.pk] and initial["base"]["server_host"] == big.pk
    assert initial["matrix"]["device"] == [big.devices.get(name=n).pk for n in ("hdd", "ssd")]  # RAM-backed left out
    assert initial["matrix"]["scale"] == "1092, 8738"  # a quarter of 64 GiB, twice 64 GiB
    assert initial["matrix"]["clients"] == "1, 4, 10, 32"  # 32: twice the 16 cores
    assert_scale_at_least_clients(initial)
    description = initial["campaign"]["description"]
    assert "Host: big (chosen)." in description
    assert "scale 1092 ≈ 16 GiB: fits in RAM (64 GiB); scale 8738 ≈ 128 GiB: exceeds RAM (64 GiB)" in description
    assert "(left out, backed by RAM: big:ram; tick them for an upper bound)" in description


def test_ssd_vs_hdd_sweeps_more_hosts_devices_only_when_more_hosts_are_chosen(lab: dict[str, Host]) -> None:
    big, mid = lab["big"], lab["mid"]

    one = preset_initial("ssd-vs-hdd", [mid.pk])
    both = preset_initial("ssd-vs-hdd", [mid.pk, big.pk])

    assert {d.host_id for d in big.devices.all().union(mid.devices.all()) if d.pk in one["matrix"]["device"]} == {
        mid.pk
    }
    assert len(both["matrix"]["device"]) == 4 and both["base"]["server_host"] == mid.pk
    assert both["matrix"]["scale"] == "273, 8738"  # fits in the smaller RAM (16 GiB), exceeds the larger (64 GiB)
    assert (
        "scale 273 ≈ 4 GiB: fits in RAM (16 GiB); scale 8738 ≈ 128 GiB: exceeds RAM (64 GiB)"
        in (both["campaign"]["description"])
    )
    assert "Hosts: mid, big (chosen)." in both["campaign"]["description"]
    assert_scale_at_least_clients(both)


def test_without_a_choice_the_preset_says_which_host_it_took_and_why(lab: dict[str, Host]) -> None:
    initial = preset_initial("ssd-vs-hdd")

    assert initial["hosts"] == [lab["big"].pk]  # three wipeable devices, as vlab, and the older one
    assert (
        "Host: big (by default: of the hosts that can run it (big, mid, vlab), it has the most wipeable devices (3); "
        "choose another on the form)." in initial["campaign"]["description"]
    )


def test_on_loop_devices_smaller_than_ram_the_exceeds_ram_tier_is_said_to_be_impossible(lab: dict[str, Host]) -> None:
    initial = preset_initial("ssd-vs-hdd", [lab["vlab"].pk])

    assert initial["matrix"]["scale"] == "28"  # the largest the 1 GiB HDD holds, far below a quarter of 24 GiB
    assert initial["matrix"]["clients"] == "1, 4, 10"
    assert_scale_at_least_clients(initial)
    description = initial["campaign"]["description"]
    assert "scale 28 ≈ 420 MiB: fits in RAM (24 GiB)" in description
    assert "Scale 409 would not fit on vlab:hdd (1 GiB): scale 28 instead" in description
    assert (
        "The does-not-fit-in-RAM tier (scale 3276 ≈ 48 GiB: exceeds RAM (24 GiB)) is impossible on these devices: "
        "it needs a device of at least 56.5 GiB for its tables, WAL and cluster, and every chosen device is smaller "
        "than the RAM (the largest, vlab:ssd, has 2 GiB)."
    ) in description


def test_a_small_device_beside_large_ones_leaves_the_exceeds_ram_tier_out_saying_what_it_needs(lab: dict) -> None:
    mixed = server("mixed", 8, 2, {"hdd": ("hdd", 500), "ssd": ("ssd", 16)})

    initial = preset_initial("ssd-vs-hdd", [mixed.pk])

    assert initial["matrix"]["scale"] == "136"  # a quarter of 8 GiB; twice 8 GiB would not fit on the 16 GiB SSD
    assert (
        "The does-not-fit-in-RAM tier (scale 1092 ≈ 16 GiB: exceeds RAM (8 GiB)) is left out: it needs a device of "
        "at least 19.6 GiB for its tables, WAL and cluster, and mixed:ssd has 16 GiB (sweep only devices that large"
    ) in initial["campaign"]["description"]


def test_client_counts_above_the_scale_that_fits_are_dropped_and_said(lab: dict[str, Host]) -> None:
    many_cores = server("cores", 24, 32, {"hdd": ("hdd", 1), "ssd": ("ssd", 2)})

    initial = preset_initial("ssd-vs-hdd", [many_cores.pk])

    assert initial["matrix"]["scale"] == "28" and initial["matrix"]["clients"] == "1, 4, 10"
    assert initial["base"]["clients"] == 10
    assert "Clients 64 left out: with more clients than the scale's 28 branch rows, tpcb-like measures lock " \
        "contention on pgbench_branches" in initial["campaign"]["description"]  # fmt: skip


@pytest.mark.parametrize("preset", ["mount-options", "page-size"])
def test_one_host_presets_run_on_the_chosen_host_and_label_their_scale(lab: dict[str, Host], preset: str) -> None:
    mid = lab["mid"]

    initial = preset_initial(preset, [mid.pk])

    assert initial["hosts"] == [mid.pk] and initial["base"]["server_host"] == mid.pk
    assert {mid.devices.get(pk=pk).host_id for pk in initial["matrix"].get("device", [])} <= {mid.pk}
    scale = initial["base"]["scale"]
    assert f"Scale: scale {scale} ≈ " in initial["campaign"]["description"]
    assert ": fits in RAM (16 GiB)" in initial["campaign"]["description"]
    assert "Host: mid (chosen)." in initial["campaign"]["description"]
    assert_scale_at_least_clients(initial)


def test_seed_004_warms_up_at_n_clients_then_measures_at_2n_at_a_scale_in_and_one_beyond_ram(lab: dict) -> None:
    mid = lab["mid"]  # 16 GiB of RAM, an HDD and a 500 GiB SSD

    initial = preset_initial("read-only", [mid.pk])

    base, description = initial["base"], initial["campaign"]["description"]
    assert initial["hosts"] == [mid.pk] and base["device"] == mid.devices.get(name="ssd").pk
    assert (base["workload"], base["clients"], base["warmup_run_clients"]) == ("select-only", 20, 10)
    assert (base["duration_s"], base["warmup_run_s"], base["warmup_s"]) == (300, 300, 0)
    assert initial["matrix"] == {"scale": "273, 2184"}  # a quarter of 16 GiB, twice 16 GiB
    assert "Scales: scale 273 ≈ 4 GiB: fits in RAM (16 GiB); scale 2184 ≈ 32 GiB: exceeds RAM (16 GiB)." in description
    assert "a 5-minute warm-up run at 10 clients, then the measured 5 minutes at 20 clients in the same cluster" in (
        description
    )
    assert "Host: mid (chosen)." in description


def test_seed_004_says_when_ram_is_too_large_or_the_ssd_too_small_for_the_does_not_fit_tier(lab: dict) -> None:
    huge = server("huge", 512, 64, {"ssd": ("ssd", 4096)})
    small_disks = lab["vlab"]  # 24 GiB of RAM, a 2 GiB SSD

    on_huge = preset_initial("read-only", [huge.pk])
    on_small = preset_initial("read-only", [small_disks.pk])

    assert on_huge["matrix"] == {"scale": "8738, 69905"}
    assert (
        "The does-not-fit tier is large for 512 GiB of RAM: loading 1 TiB takes hours a run"
        in (on_huge["campaign"]["description"])
    )
    assert on_small["matrix"] == {} and on_small["base"]["device"] == small_disks.devices.get(name="ssd").pk
    assert "The does-not-fit-in-RAM tier (scale 3276 ≈ 48 GiB: exceeds RAM (24 GiB)) is impossible on these " \
        "devices" in on_small["campaign"]["description"]  # fmt: skip


def test_seed_004_without_an_ssd_says_which_device_it_took(lab: dict) -> None:
    spinning = server("spinning", 8, 2, {"hdd": ("hdd", 100)})

    initial = preset_initial("read-only", [spinning.pk])

    assert "spinning has no wipeable SSD: spinning:hdd (HDD) instead." in initial["campaign"]["description"]


def test_a_device_too_small_for_the_seeds_scale_lowers_the_clients_with_it(lab: dict[str, Host]) -> None:
    tiny = server("tiny", 4, 2, {"hdd": ("hdd", 0.25)})

    initial = preset_initial("mount-options", [tiny.pk])

    assert initial["base"]["scale"] == 6 and initial["base"]["clients"] == 6
    description = initial["campaign"]["description"]
    assert "Scale: scale 6 ≈ 90 MiB: fits in RAM (4 GiB). Scale 10 would not fit on tiny:hdd: scale 6 instead." in (
        description
    )
    assert "Clients 10 left out: with more clients than the scale's 6 branch rows" in description
    assert "not the storage. 6 clients instead." in description


def test_the_page_size_study_keeps_its_database_in_ram(lab: dict[str, Host]) -> None:
    small = server("small", 4, 2, {"ssd": ("ssd", 100)})

    initial = preset_initial("page-size", [small.pk])

    assert initial["base"]["scale"] == 68 and initial["base"]["clients"] == 4
    assert (
        "Scale: scale 68 ≈ 1020 MiB: fits in RAM (4 GiB). Scale 100 would take more than a quarter of the RAM"
        in (initial["campaign"]["description"])
    )


def test_the_page_size_study_takes_the_host_given(lab: dict[str, Host]) -> None:
    make_pg_install(lab["big"], bin_dir="/opt/pg4k/bin", version="15.19", block_size=4096)

    by_default = preset_initial("page-size")
    assert by_default["hosts"] == [lab["big"].pk]
    assert "most page sizes (2)" in by_default["campaign"]["description"]
    chosen = preset_initial("page-size", [lab["mid"].pk])
    assert chosen["hosts"] == [lab["mid"].pk] and chosen["base"]["server_host"] == lab["mid"].pk
    assert "Host: mid (chosen)." in chosen["campaign"]["description"]


@pytest.mark.parametrize(
    ("who", "reason"),
    [
        ("off", "off is disabled in the inventory: it takes no new runs."),
        ("client", "client does not serve PostgreSQL"),
        ("self", "self is benchlab's own server, and an admin has not allowed runs on it"),
    ],
)
def test_a_host_that_cannot_run_is_refused_saying_why_and_which_can(lab: dict, who: str, reason: str) -> None:
    with pytest.raises(PresetRefused) as refused:
        preset_initial("ssd-vs-hdd", [lab["big"].pk, lab[who].pk])

    assert reason in str(refused.value) and "Hosts that can: big, mid, vlab." in str(refused.value)
    with pytest.raises(PresetInvalid, match="Hosts that can: big, mid, vlab"):
        preset_plan("mount-options", [lab[who].pk])


def test_one_host_presets_refuse_several_hosts_and_unknown_ones(lab: dict[str, Host]) -> None:
    with pytest.raises(PresetRefused, match="This preset runs on one host; 2 were chosen"):
        preset_initial("read-only", [lab["big"].pk, lab["mid"].pk])
    with pytest.raises(PresetRefused, match="No host has id 999999"):
        preset_initial("read-only", [999999])


def test_the_plan_a_preset_queues_by_itself_runs_on_the_host_given(lab: dict[str, Host]) -> None:
    plan = preset_plan("mount-options", [lab["vlab"].pk])

    assert plan.base.server_host_id == lab["vlab"].pk and plan.preset == "mount-options"
    assert preset_plan("mount-options").base.server_host_id == lab["big"].pk  # the default, named in the description


def test_the_form_is_filled_for_the_host_in_the_query_and_offers_the_others(otto: Client, lab: dict[str, Host]) -> None:
    page = otto.get(reverse("campaign-new"), {"preset": "read-only", "host": str(lab["mid"].pk)}).content.decode()

    assert f'<option value="{lab["mid"].pk}" selected>mid (16 GiB RAM)</option>' in page
    assert f'<option value="{lab["big"].pk}">big (64 GiB RAM)</option>' in page
    assert "Host: mid (chosen)." in page and "off is disabled in the inventory" in page  # why it is not offered

    response = otto.get(reverse("campaign-new"), {"preset": "read-only", "host": str(lab["off"].pk)})
    assert response.status_code == 400
    assert "off is disabled in the inventory: it takes no new runs. Hosts that can: big, mid, vlab." in (
        response.content.decode()
    )
    assert otto.get(reverse("campaign-new"), {"preset": "read-only", "host": "x"}).status_code == 400


def preview(otto: Client, host: Host, **changes: object) -> str:
    device = host.devices.get(name="hdd")
    base = run_form_fields(host, device, host.pg_installs.get(), duration_s=5, warmup_s=0)
    fields: dict[str, object] = {f"base-{name}": value for name, value in base.items()}
    fields |= {"name": "mine", "description": "", "repetitions": 3, "order": "interleaved", "seed": ""}
    fields |= {"scale": "2, 20", "clients": "1, 8", "action": "preview"}
    response = otto.post(reverse("campaign-new"), fields | changes)
    assert response.status_code == 200, response.content.decode()
    return response.content.decode()


def test_the_preview_warns_of_configurations_with_fewer_branch_rows_than_clients(otto: Client, lab: dict) -> None:
    page = preview(otto, lab["mid"])

    assert 'id="contention-warning"' in page and "in 1 configuration the clients outnumber" in page
    assert "<li>#2: scale 2 for 8 clients" in page
    assert "Queue 12 runs" in page  # a warning, not a refusal
    assert 'id="contention-warning"' not in preview(otto, lab["mid"], **{"base-workload": "select-only"})


def test_the_one_click_builds_build_on_the_host_chosen_from_its_own_source(otto: Client, lab: dict) -> None:
    default = otto.get(reverse("campaign-new"), {"preset": "page-size"}).content.decode()
    other = otto.get(reverse("campaign-new"), {"preset": "page-size", "host": str(lab["mid"].pk)}).content.decode()

    # The default host (most page sizes) and the chosen one both offer to build every page size,
    # 8 kB too, from a source they have: the packaged 15.19 installs are not the study's.
    assert f'<option value="{lab["big"].pk}" selected>big</option>' in default
    assert f'<option value="{lab["mid"].pk}" selected>mid</option>' in other
    for page, host in ((default, "big"), (other, "mid")):
        assert 'id="build-first-button"' in page and "Build 2 kB, 4 kB and 8 kB pages, then queue this study" in page
        assert f"Builds them on {host} from PostgreSQL" in page


def test_tier_labels_and_client_counts_without_the_inventory() -> None:
    assert tier_label(40, [24 * GIB]) == "scale 40 ≈ 600 MiB: fits in RAM (24 GiB)"
    assert tier_label(3200, [24 * GIB]) == "scale 3200 ≈ 46.9 GiB: exceeds RAM (24 GiB)"
    assert tier_label(700, [8 * GIB, 16 * GIB]).endswith("fits in the RAM of some chosen hosts only (8 GiB, 16 GiB)")
    assert tier_label(40, []) == "scale 40 ≈ 600 MiB: RAM not probed"
    assert clients_within(8, [1, 4, 10, 16], "simple-update")[0] == [1, 4]
    assert clients_within(8, [10, 20], "select-only") == ([10, 20], "")  # reads no branch row it locks
