"""The hardware inventory: lab hosts, their storage devices and their PostgreSQL installs.

Fields marked "discovered" are written by the host probe, not by people; runs copy what
they need from here into their own record, so later edits never rewrite history.
"""

import ipaddress
from datetime import UTC

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from runs.common.ssh_keys import parse_host_keys
from runs.lab.errors import InvalidOption
from runs.lab.storage.device_paths import check_block_device_path, check_directory_device_path

_absolute_path = RegexValidator(r"^/\S*$", "Give an absolute path without spaces.")
_name = RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", "Use letters, digits, '.', '_' and '-'.")


class Host(models.Model):
    class Transport(models.TextChoices):
        SSH = "ssh", "SSH"
        LOCAL = "local", "Local (this machine)"

    name = models.CharField(max_length=100, unique=True, validators=[_name])
    address = models.CharField(
        max_length=255, blank=True, help_text="DNS name or IP address the workers connect to (SSH only)."
    )
    ssh_port = models.PositiveIntegerField(default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    ssh_user = models.CharField(max_length=64, default="root")
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.SSH)
    host_keys = models.TextField(
        blank=True,
        # HTML, as Django renders every help_text: the angle brackets are escaped to be shown.
        help_text="Pinned public host key(s), one per line as <code>&lt;type&gt; &lt;base64&gt;</code>, e.g. the "
        "line of the host's <code>/etc/ssh/ssh_host_ed25519_key.pub</code>. "
        "Connections to a host whose key is not listed here are refused.",
    )
    private_key_path = models.CharField(
        max_length=500,
        blank=True,
        validators=[_absolute_path],
        help_text="Path of the private key on the worker machines. Leave empty to store a key instead.",
    )
    # A Fernet token (see runs.common.ssh_keys); never the plaintext key, never rendered.
    private_key_encrypted = models.TextField(blank=True, editable=False)
    private_key_fingerprint = models.CharField(max_length=100, blank=True, editable=False)

    serves_postgres = models.BooleanField("serves PostgreSQL", default=True)
    runs_clients = models.BooleanField("runs pgbench clients", default=True)
    enabled = models.BooleanField(default=True, help_text="Disabled hosts take no new runs.")
    allow_runs_on_benchlab_server = models.BooleanField(
        "allow runs on benchlab's own server",
        default=False,
        help_text="Only for the machine benchlab itself runs on (the local transport, or an SSH address on "
        "loopback): a run there shares disk, memory and CPU with benchlab and its database. Off, nobody "
        "can queue runs on it.",
    )
    notes = models.TextField(blank=True)
    # The run that has this host now. Set by a conditional UPDATE (the dispatcher: runs.jobs.dispatch), so
    # exactly one run at a time holds a host, across any number of workers and machines.
    claimed_by = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, editable=False, related_name="+"
    )
    # The PostgreSQL build that has this host now (runs.builds.services.builds): one job per host, so a
    # host claimed by a run or by a build takes nothing else. Claimed by the same dispatcher.
    claimed_by_build = models.ForeignKey(
        "runs.PgBuild", on_delete=models.SET_NULL, null=True, blank=True, editable=False, related_name="+"
    )
    # The raw device baseline (fio) that has this host now (runs.baselines.services.baselines): one job per host.
    claimed_by_baseline = models.ForeignKey(
        "runs.DeviceBaseline", on_delete=models.SET_NULL, null=True, blank=True, editable=False, related_name="+"
    )
    # A run that ended while this host could not be reached left its mount and processes there:
    # the host takes no run until the sweeper has cleaned up after it (runs.bench.services.pending_cleanup).
    cleanup_pending_for = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, editable=False, related_name="+",
        help_text="A run that ended while this host was unreachable; it is cleaned up when the host answers again.",
    )  # fmt: skip
    # A host that did not answer when a job was to start on it (runs.jobs.host_reach): its
    # jobs wait, tried again with backoff, and fail only after BENCHLAB_UNREACHABLE_FAIL_AFTER_S.
    unreachable_since = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="Since when the host has not answered; empty when it does."
    )
    unreachable_error = models.TextField(blank=True, editable=False, help_text="Why the last connection failed.")
    unreachable_retry_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When a job may try to connect again."
    )

    # Discovered by the probe.
    hostname = models.CharField(max_length=255, blank=True, editable=False)
    cpu_model = models.CharField("CPU model", max_length=255, blank=True, editable=False)
    cpu_cores = models.PositiveIntegerField("CPU cores", null=True, blank=True, editable=False)
    memory_bytes = models.BigIntegerField("RAM (bytes)", null=True, blank=True, editable=False)
    kernel = models.CharField(max_length=255, blank=True, editable=False)
    distribution = models.CharField(max_length=255, blank=True, editable=False)
    facts = models.JSONField(default=dict, blank=True, editable=False, help_text="Everything the last probe found.")
    probed_at = models.DateTimeField(null=True, blank=True, editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_local(self) -> bool:
        return self.transport == self.Transport.LOCAL

    @property
    def unreachable_note(self) -> str:
        """ "unreachable since 23:10:05 (cannot connect to …); tried again from 23:11:05", or ""
        for a host that answered the last job that connected to it."""
        if self.unreachable_since is None:
            return ""
        since = timezone.localtime(self.unreachable_since).strftime("%Y-%m-%d %H:%M:%S %Z")
        note = f"unreachable since {since} ({self.unreachable_error})"
        if self.unreachable_retry_at is not None:
            note += f"; tried again from {timezone.localtime(self.unreachable_retry_at):%H:%M:%S}"
        return note

    @property
    def has_stored_private_key(self) -> bool:
        return bool(self.private_key_encrypted)

    @property
    def is_benchlab_server(self) -> bool:
        """Whether this host is the machine benchlab runs on, as far as the inventory tells."""
        return self.is_local or is_loopback(self.address)

    def own_server_refusal(self) -> str | None:
        """Why runs may not use this host because it is benchlab's own server, or None."""
        if self.is_benchlab_server and not self.allow_runs_on_benchlab_server:
            return (
                f"{self.name} is benchlab's own server, and an admin has not allowed runs on it "
                "(Admin → Hosts → allow runs on benchlab's own server)."
            )
        return None

    @property
    def reprobe_hint(self) -> str:
        """How the inventory learns what this host has now, as a sentence's start."""
        return (
            f"Re-probe {self.name} (admin: Hosts, select it, action “Probe now”; or `manage.py probe_host {self.name}`)"
        )

    def refusal_for_runs(self) -> str | None:
        """Why no run may be queued on this host now, or None."""
        if not self.enabled:
            return f"{self.name} is disabled in the inventory: it takes no new runs."
        return self.own_server_refusal()

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.host_keys:
            try:
                self.host_keys = "\n".join(key.line for key in parse_host_keys(self.host_keys))
            except ValidationError as exc:
                errors["host_keys"] = "; ".join(exc.messages)
        if self.transport == self.Transport.SSH:
            if not self.address:
                errors["address"] = "An SSH host needs an address."
            if self.private_key_path and self.private_key_encrypted:
                errors["private_key_path"] = "Use either a key path or a stored key, not both."
            elif not self.private_key_path and not self.private_key_encrypted:
                errors["private_key_path"] = "An SSH host needs a key path or a stored private key."
        if errors:
            raise ValidationError(errors)


class Device(models.Model):
    class Kind(models.TextChoices):
        HDD = "hdd", "HDD"
        SSD = "ssd", "SSD"
        NVME = "nvme", "NVMe"
        RAM = "ram", "RAM"
        VIRTUAL = "virtual", "Virtual"

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="devices")
    name = models.CharField(max_length=100, validators=[_name])
    kind = models.CharField(max_length=10, choices=Kind.choices)
    path = models.CharField(
        max_length=500,
        validators=[_absolute_path],
        help_text="A stable block-device path (/dev/disk/by-id/…) or, for a directory-backed device, a directory.",
    )
    model = models.CharField(max_length=255, blank=True)
    serial = models.CharField(max_length=255, blank=True)
    capacity_bytes = models.BigIntegerField("capacity (bytes)", null=True, blank=True)
    wipe_allowed = models.BooleanField(
        default=False,
        help_text="Allow benchlab to create filesystems on this device, destroying everything on it.",
    )
    notes = models.TextField(blank=True)
    # The vendor's claimed figures (the seeds' "claims vs measured"), shown beside fio's baselines.
    claimed_seq_read_mb_s = models.FloatField("claimed sequential read (MB/s)", null=True, blank=True)
    claimed_seq_write_mb_s = models.FloatField("claimed sequential write (MB/s)", null=True, blank=True)
    claimed_rand_read_iops = models.FloatField("claimed random 4k read (IOPS)", null=True, blank=True)
    claimed_rand_write_iops = models.FloatField("claimed random 4k write (IOPS)", null=True, blank=True)
    claimed_latency_ms = models.FloatField(
        "claimed access latency (ms)", null=True, blank=True, help_text="Average access time or latency, as quoted."
    )
    # Storage with a loaded, stopped database that a campaign's run left mounted for the next
    # run of the same setup (runs/bench/services/reuse.py): {"signature", "campaign", "run", "setup"}.
    kept_setup = models.JSONField(null=True, blank=True, editable=False)
    # "Read health now" asked and not yet stored (runs/inventory/services/device_health.py): the
    # page says since when; one reading at a time per device.
    health_asked_at = models.DateTimeField(null=True, blank=True, editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["host__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["host", "name"], name="device_unique_name_per_host"),
            models.UniqueConstraint(fields=["host", "path"], name="device_unique_path_per_host"),
        ]

    def __str__(self) -> str:
        return f"{self.host.name}:{self.name}"

    @property
    def is_block_device(self) -> bool:
        return self.path.startswith("/dev/")

    def clean(self) -> None:
        # The lab layer applies the same rules again on the host, after resolving symlinks.
        try:
            if self.is_block_device:
                check_block_device_path(self.path)
            else:
                check_directory_device_path(self.path, benchlab_data_dirs())
        except InvalidOption as exc:
            raise ValidationError({"path": f"{str(exc)[:1].upper()}{str(exc)[1:]}."}) from None


def is_loopback(address: str) -> bool:
    """Whether an inventory address means this very machine, as far as it can be told without
    asking DNS (an admin who enters the server's own LAN address is not caught)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        name = address.lower().rstrip(".")
        return name in ("localhost", "localhost.localdomain") or name.endswith(".localhost")
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or ip.is_unspecified or bool(mapped and (mapped.is_loopback or mapped.is_unspecified))


def benchlab_data_dirs() -> tuple[str, ...]:
    """Directories that hold benchlab's own data: its checkout and its var/ (secrets, keys)."""
    return (str(settings.BASE_DIR), str(settings.VAR_DIR))


def _power_of_two_kib(low: int, high: int) -> list[int]:
    sizes = []
    size = low
    while size <= high:
        sizes.append(size * 1024)
        size *= 2
    return sizes


BLOCK_SIZES = _power_of_two_kib(1, 32)  # what PostgreSQL's configure --with-blocksize accepts
WAL_BLOCK_SIZES = _power_of_two_kib(1, 64)  # --with-wal-blocksize


class PgInstall(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="pg_installs")
    bin_dir = models.CharField(
        "bin directory", max_length=500, validators=[_absolute_path], help_text="e.g. /usr/lib/postgresql/15/bin"
    )
    version = models.CharField(max_length=50, help_text="As `postgres --version` reports it, e.g. 15.19.")
    block_size = models.PositiveIntegerField(
        default=8192, choices=[(size, f"{size // 1024} kB") for size in BLOCK_SIZES]
    )
    wal_block_size = models.PositiveIntegerField(
        "WAL block size", default=8192, choices=[(size, f"{size // 1024} kB") for size in WAL_BLOCK_SIZES]
    )
    label = models.CharField(max_length=100, blank=True, help_text="e.g. 'PG 15, 4 kB pages (custom build)'.")
    # A benchlab build whose prefix was removed from the host while runs still name it: kept for
    # their history, offered to no new run (builds.services.remove).
    removed_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="Its build was removed from the host: no new run uses it."
    )
    # The last probe of its host found none of its programs (a host rebuilt, a build deleted by
    # hand): offered to no new run until a probe finds it again (inventory.services.probe).
    missing_since = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="A probe of its host found none of its programs since then: no new run uses it until one does.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["host__name", "version", "block_size"]
        verbose_name = "PostgreSQL install"
        constraints = [
            models.UniqueConstraint(fields=["host", "bin_dir"], name="pginstall_unique_bin_dir_per_host"),
        ]

    def __str__(self) -> str:
        return self.label or f"PostgreSQL {self.version} ({self.block_size // 1024} kB pages) on {self.host.name}"

    @property
    def missing_note(self) -> str:
        """ "missing from lab1 since 2026-11-26 23:40 UTC", or "" while it is there."""
        if self.missing_since is None:
            return ""
        return f"missing from {self.host.name} since {self.missing_since.astimezone(UTC):%Y-%m-%d %H:%M} UTC"

    @property
    def choice_label(self) -> str:
        """As a form offers it: still offered when missing, marked (queueing on it says why not)."""
        return f"{self} ({self.missing_note})" if self.missing_since else str(self)

    def missing_refusal(self) -> str:
        """Why no new run may use this install while a probe finds it gone."""
        return (
            f"{self} ({self.bin_dir}) is {self.missing_note}: the probe found none of its programs there. "
            f"Choose another install; once it is back, {self.host.reprobe_hint[0].lower()}{self.host.reprobe_hint[1:]}."
        )
