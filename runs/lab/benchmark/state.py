"""The state a run measures from, brought about between loading and measuring.

pgbench's numbers depend on what is cached and on what loading left behind (the pgbench
documentation's "Good Practices"): a run declares both, and this module makes them so.
- Data: freshly loaded (as `pgbench -i` leaves it), frozen (then VACUUM FREEZE and a CHECKPOINT:
  no anti-wraparound vacuum or hint-bit writes inside the window), or reused from the run that
  kept its setup (storage/kept.py; nothing to do here: recorded as "reused" only if it was).
- Cache: warm (the warm-up, as the run sets it) or cold: a clean stop (its shutdown checkpoint),
  sync, the OS caches dropped, PostgreSQL started again, so both shared buffers and the page
  cache start empty.
- A CHECKPOINT before the window (the default), so it does not pay for what loading left dirty,
  and a settle pause: until the device has been quiet for a second, at most `settle_s`.

What was done is returned as the run records it (environment["method"]["state"]).
"""

import time
from collections.abc import Sequence
from typing import Any

from runs.lab.errors import LabError
from runs.lab.options import StateBefore
from runs.lab.postgres.cluster import Cluster, psql, start, stop_fast
from runs.lab.transport.interface import Transport

# Why a second of quiet, and 5 s at most by default (Run.settle_s): once a CHECKPOINT's fsyncs
# have returned, what can still reach the device is the kernel's flusher (it wakes every 5 s,
# vm.dirty_writeback_centisecs = 500) and the filesystem's journal commit (ext4 and btrfs commit
# every 5 s by default). One such period bounds the wait; a second without a completed write and
# with nothing in flight says the device has gone quiet sooner, which on an idle device costs
# about a second rather than a fixed five.
QUIET_S = 1.0
POLL_S = 0.25


def bring_to_state(
    transport: Transport,
    cluster: Cluster,
    state: StateBefore,
    databases: Sequence[str],
    reused: bool,
    device: str | None,
    own_pids: list[int],
) -> dict[str, Any]:
    """Make the cluster and the host what `state` asks for, just before measuring; what was done.
    `reused`: the data comes from a kept setup (then it is not loaded, nor frozen, again).
    `device`: the kernel's name of the device under test (None: none to wait for)."""
    state.validate()
    data = "reused" if reused else ("fresh" if state.data == "reused" else state.data)
    if data == "frozen":
        for database in databases:
            psql(transport, cluster, "VACUUM (FREEZE)", database=database)
        psql(transport, cluster, "CHECKPOINT")
    if state.cache == "cold":
        _restart_cold(transport, cluster, own_pids)
    if state.checkpoint:
        psql(transport, cluster, "CHECKPOINT")
    settled = settle(transport, device, state.settle_s)
    started = psql(transport, cluster, "SELECT extract(epoch FROM pg_postmaster_start_time())")
    return {
        "cache": state.cache,
        "data": data,
        "checkpoint_before": state.checkpoint,
        "settle_s": settled,
        "server_started_epoch": float(started),  # a cold run's is after its load (result.loaded_epoch)
    }


def _restart_cold(transport: Transport, cluster: Cluster, own_pids: list[int]) -> None:
    """A clean stop (the shutdown checkpoint writes everything out), every dirty page on the
    host written, the page cache, dentries and inodes dropped, and PostgreSQL started again."""
    if not stop_fast(transport, cluster):
        raise LabError("PostgreSQL did not stop with pg_ctl stop -m fast for the cold start")
    transport.run(["sync"])
    transport.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"])
    start(transport, cluster)
    if cluster.postmaster_pid:
        own_pids.append(cluster.postmaster_pid)


def device_writes(transport: Transport, device: str) -> tuple[int, int] | None:
    """The device's sectors written so far and its requests in flight (/proc/diskstats); None
    if the kernel does not list it."""
    for line in transport.run(["cat", "/proc/diskstats"], check=False).stdout.splitlines():
        fields = line.split()
        if len(fields) > 11 and fields[2] == device:
            return int(fields[9]), int(fields[11])
    return None


def settle(transport: Transport, device: str | None, longest_s: float) -> float:
    """Wait until the device has written nothing, with nothing in flight, for QUIET_S, at most
    `longest_s`; the seconds waited."""
    began = time.monotonic()
    if device is None or longest_s <= 0:
        return 0.0
    last = device_writes(transport, device)
    quiet_since = began
    while last is not None and time.monotonic() - began < longest_s:
        if time.monotonic() - quiet_since >= QUIET_S:
            break
        time.sleep(POLL_S)
        now = device_writes(transport, device)
        if now is None or now[0] != last[0] or now[1] > 0:
            quiet_since = time.monotonic()
        last = now
    return round(time.monotonic() - began, 2)
