"""The client hosts of a run: pgbench on each of them against the run's server, all starting
together (behind a barrier), each with its own results; the run's own figures are their total.

A run without client hosts runs pgbench on the server itself. With client hosts, each one gets
its own database on the server (as seed 000 drives one server from two machines, userone and
usertwo), or all share one (`Run.shared_database`).
"""

from django.db import models

from runs.models.inventory import Host, PgInstall

MAX_CLIENT_HOSTS = 8
SHARED_DATABASE = "bench"


def client_database(position: int, count: int, shared: bool) -> str:
    """The database on the server that client `position` (1, 2, …) of `count` runs pgbench
    against: the one database when they share it or when there is at most one client host,
    else its own, bench_<position> (as seed 000 gives each of its two machines its own)."""
    if shared or count <= 1:
        return SHARED_DATABASE
    return f"{SHARED_DATABASE}_{position}"


class RunClient(models.Model):
    """One client host of a run: where pgbench ran, against which database, and what it measured."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="run_clients")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="run_client_of")
    position = models.PositiveSmallIntegerField()  # 1, 2, …: the order the run names them in
    database = models.CharField(max_length=63)

    # --- what came out (null until the run's results are stored) ---
    pgbench_version = models.CharField(max_length=100, blank=True)
    command = models.TextField(blank=True)
    started_epoch = models.FloatField(null=True, blank=True)  # when its pgbench started, by the client's clock
    rtt_ms = models.FloatField("round trip to the server (ms)", null=True, blank=True)
    exit_status = models.IntegerField(null=True, blank=True)
    tps = models.FloatField(null=True, blank=True)
    latency_avg_ms = models.FloatField(null=True, blank=True)
    latency_stddev_ms = models.FloatField(null=True, blank=True)
    latency_p50_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    latency_p99_ms = models.FloatField(null=True, blank=True)
    steady_tps_mean = models.FloatField(null=True, blank=True)
    summary = models.JSONField(default=dict, blank=True)  # pgbench's summary, every field
    latency = models.JSONField(default=dict, blank=True)  # every percentile, as Run.metrics["latency"]

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="runclient_one_per_position"),
            models.UniqueConstraint(fields=["run", "host"], name="runclient_host_once"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} client {self.position} ({self.host_id})"


class RunClientSample(models.Model):
    """One second of one client's pgbench (the run's own RunSample is the total of its clients)."""

    run_client = models.ForeignKey(RunClient, on_delete=models.CASCADE, related_name="samples")
    second = models.PositiveIntegerField()
    tps = models.FloatField()
    latency_ms = models.FloatField()

    class Meta:
        ordering = ["run_client", "second"]
        constraints = [models.UniqueConstraint(fields=["run_client", "second"], name="runclientsample_one_per_second")]

    def __str__(self) -> str:
        return f"client {self.run_client_id} second {self.second}: {self.tps:.1f} tps"


def client_pgbench_install(server_install: PgInstall, client: Host) -> PgInstall | None:
    """The client's PostgreSQL install whose pgbench drives the run: the server's major
    version when the client has it (same protocol features and output), else its newest."""
    # A removed build's pgbench is gone, and so is a missing install's.
    live = [pg for pg in client.pg_installs.all() if pg.removed_at is None and pg.missing_since is None]
    installs = sorted(live, key=lambda pg: version_key(pg.version))
    major = server_install.version.split(".")[0]
    same_major = [pg for pg in installs if pg.version.split(".")[0] == major]
    candidates = same_major or installs
    return candidates[-1] if candidates else None


def version_key(version: str) -> tuple[int, ...]:
    """15.19 -> (15, 19), to sort an admin-typed version; parts other than ASCII digits are left
    out ("²" is a digit to str.isdigit(), not to int())."""
    return tuple(int(part) for part in version.split(".") if part.isascii() and part.isdigit())
