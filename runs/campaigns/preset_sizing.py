"""How the presets size a study to the chosen hosts: the seeds' two memory tiers (a database that
fits in RAM, and one that does not), fitted to the devices, and client counts that a TPC-B-like
workload can measure. Pure: numbers in, scales and sentences out (runs.campaigns.presets reads the inventory).

Seed 000/003 loaded scale 100 (about 1.5 GB, "fits in" its 8 GB of RAM) and scale 1000 (about
15 GB, "does not fit"): about a fifth of the RAM, and about twice it. The tiers here are a quarter
of the smallest chosen host's RAM and twice the largest's, so every host's page cache holds the
first and none holds the second.

tpcb-like and simple-update update one row of pgbench_branches per transaction, and there are
`scale` branch rows: with more clients than that, clients wait for each other's row locks and the
run measures that contention rather than the storage (pgbench's documentation).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runs.campaigns.matrix import Cell
from runs.common.units import binary_size
from runs.lab.pgbench.scale_room import BYTES_PER_SCALE, FORMATTED_SHARE, largest_fitting_scale, scale_need
from runs.method.facts import BRANCH_LOCKING, spec_facts
from runs.method.outcome import Status
from runs.method.run_checks import check_contention

FITS_SHARE = 0.25  # of the smallest host's RAM: the fits-in-RAM tier, with room for the page cache
EXCEEDS_FACTOR = 2  # times the largest host's RAM: the does-not-fit tier, past any page cache


def scale_for_bytes(size_bytes: float) -> int:
    """The scale whose tables and indexes take about size_bytes."""
    return max(1, int(size_bytes // BYTES_PER_SCALE))


def room_scale(capacity_bytes: int) -> int:
    """The largest scale whose load fits on a device this large once formatted (the queue form's rule)."""
    return largest_fitting_scale(int(capacity_bytes * FORMATTED_SHARE))


def device_needed(scale: int) -> int:
    """The smallest device (bytes) that holds the load of `scale` once formatted."""
    return int(scale_need(scale).total_bytes / FORMATTED_SHARE) + 1


def tier_label(scale: int, memories: Sequence[int]) -> str:
    """ "scale 40 ≈ 600 MiB: fits in RAM (24 GiB)", "scale 3200 ≈ 47 GiB: exceeds RAM (24 GiB)", by
    the chosen hosts' RAM (bytes): fits in the smallest's, or exceeds the largest's."""
    size_bytes = scale * BYTES_PER_SCALE
    size = f"scale {scale} ≈ {binary_size(size_bytes)}"
    if not memories:
        return f"{size}: RAM not probed"
    if size_bytes <= min(memories):
        return f"{size}: fits in RAM ({binary_size(min(memories))})"
    if size_bytes > max(memories):
        return f"{size}: exceeds RAM ({binary_size(max(memories))})"
    return f"{size}: fits in the RAM of some chosen hosts only ({', '.join(binary_size(m) for m in memories)})"


def clients_within(scale: int, clients: Iterable[int], workload: str) -> tuple[list[int], str]:
    """The client counts a workload at this scale measures without branch-row contention, and a
    sentence naming those dropped (empty when none is)."""
    counts = sorted(set(clients))
    if workload not in BRANCH_LOCKING:
        return counts, ""
    kept = [c for c in counts if c <= scale]
    dropped = [c for c in counts if c > scale]
    if not dropped:
        return kept, ""
    instead = "" if kept else f" {scale} clients instead."
    return kept or [scale], (
        f"Clients {', '.join(map(str, dropped))} left out: with more clients than the scale's {scale} branch rows, "
        f"{workload} measures lock contention on pgbench_branches, not the storage.{instead}"
    )


@dataclass(frozen=True)
class Tiers:
    """The scales of the two tiers that fit the devices, and what was changed or left out, said."""

    scales: list[int]
    notes: list[str]


def memory_tiers(
    memories: Sequence[int], devices: Sequence[tuple[str, int]], clients_at_least: int = 1, *, seed_scale: int = 10
) -> Tiers:
    """Scales for "fits in RAM" and "does not fit in RAM" from the chosen hosts' RAM (bytes, the
    probed ones) and the swept devices' (name, capacity bytes). The fits-in-RAM scale is raised to
    `clients_at_least` (scale ≥ clients); a tier that cannot fit on the smallest device is lowered
    (fits in RAM) or left out (exceeds RAM), saying what would be needed."""
    notes: list[str] = []
    smallest = min(devices, key=lambda d: d[1], default=None)
    fits_target = scale_for_bytes(min(memories) * FITS_SHARE) if memories else seed_scale
    if not memories:
        notes.append(f"No chosen host has a probed RAM size: scale {seed_scale} assumed to fit in RAM (probe them).")
    fits = max(fits_target, clients_at_least)
    if fits > fits_target:
        notes.append(f"The fits-in-RAM scale is raised to {fits} so that the scale is at least the clients.")
    if smallest is not None and room_scale(smallest[1]) < fits:
        room = max(1, room_scale(smallest[1]))
        notes.append(
            f"Scale {fits} would not fit on {smallest[0]} ({binary_size(smallest[1])}): scale {room} instead, "
            "the largest that does."
        )
        fits = room
    scales = [fits]
    if not memories:
        return Tiers(scales, notes)
    exceeds = scale_for_bytes(max(memories) * EXCEEDS_FACTOR)
    if smallest is None or room_scale(smallest[1]) >= exceeds:
        return Tiers([*scales, exceeds], notes)
    largest = max(devices, key=lambda d: d[1])
    needed = f"it needs a device of at least {binary_size(device_needed(exceeds))} for its tables, WAL and cluster"
    tier = f"The does-not-fit-in-RAM tier ({tier_label(exceeds, memories)})"
    if room_scale(largest[1]) * BYTES_PER_SCALE <= max(memories):
        notes.append(
            f"{tier} is impossible on these devices: {needed}, and every chosen device is smaller than the RAM "
            f"(the largest, {largest[0]}, has {binary_size(largest[1])})."
        )
    else:
        notes.append(
            f"{tier} is left out: {needed}, and {smallest[0]} has {binary_size(smallest[1])} (sweep only devices "
            "that large to run it)."
        )
    return Tiers(scales, notes)


def branch_contention(cells: Sequence[Cell]) -> list[tuple[int, Cell]]:
    """The runnable configurations (numbered from 1, as the preview's matrix) whose clients
    outnumber the branch rows their workload updates (runs.method's contention check)."""
    return [
        (number, cell)
        for number, cell in enumerate(cells, start=1)
        if cell.valid and check_contention(spec_facts(cell.spec, None)).status == Status.WARNING
    ]
