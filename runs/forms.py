"""The queue form: every field of a run, validated with the same rules the lab layer applies,
so a mistake shows beside its field instead of failing on the lab host minutes later."""

from typing import Any

from django import forms

from runs.lab.errors import InvalidOption
from runs.lab.pgbench import RunOptions
from runs.lab.postgres import hba_address, parse_settings
from runs.lab.storage import parse_mkfs_options, parse_mount_options
from runs.models import Device, Filesystem, Host, PgInstall, Run, Workload

RUN_FIELDS = [
    "server_host",
    "device",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "pg_install",
    "pg_settings",
    "workload",
    "custom_script",
    "scale",
    "clients",
    "threads",
    "duration_s",
    "warmup_s",
    "query_mode",
    "rate_limit_tps",
    "log_sampling_rate",
    "client_host",
]


class RunForm(forms.ModelForm):
    class Meta:
        model = Run
        fields = RUN_FIELDS
        widgets = {
            "pg_settings": forms.Textarea(
                attrs={"rows": 4, "placeholder": "shared_buffers = 256MB\nmax_wal_size = 4GB"}
            ),
            "custom_script": forms.Textarea(attrs={"rows": 4}),
            "mount_options": forms.TextInput(attrs={"placeholder": "noatime,data=writeback,barrier=0"}),
            "mkfs_options": forms.TextInput(attrs={"placeholder": "-b 4096"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Hosts that take no runs stay listed, marked, so choosing one says why (clean()).
        enabled = Host.objects.filter(enabled=True)
        for name, role in (("server_host", "serves_postgres"), ("client_host", "runs_clients")):
            field = self.fields[name]
            field.queryset = enabled.filter(**{role: True})  # type: ignore[attr-defined]
            field.label_from_instance = _host_label  # type: ignore[attr-defined]
        self.fields["device"].queryset = Device.objects.select_related("host")  # type: ignore[attr-defined]
        self.fields["pg_install"].queryset = PgInstall.objects.select_related("host")  # type: ignore[attr-defined]

    def _lab_check(self, field: str, check: Any) -> Any:
        try:
            return check()
        except InvalidOption as exc:
            self.add_error(field, str(exc))
            return None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        server, device, pg = data.get("server_host"), data.get("device"), data.get("pg_install")
        if server and (refusal := server.refusal_for_runs()):
            self.add_error("server_host", refusal)
        if server and device and device.host_id != server.pk:
            self.add_error("device", f"{device} is not a device of {server}.")
        if server and pg and pg.host_id != server.pk:
            self.add_error("pg_install", f"{pg} is not installed on {server}.")
        client = data.get("client_host")
        if client and server:
            self._check_client(client, server)
        if client and "client_host" not in self.errors and (refusal := client.refusal_for_runs()):
            self.add_error("client_host", refusal)
        fstype = data.get("filesystem")
        if fstype:
            self._lab_check("mount_options", lambda: parse_mount_options(fstype, data.get("mount_options", "")))
            if data.get("mkfs_options"):
                self._lab_check("mkfs_options", lambda: parse_mkfs_options(fstype, data["mkfs_options"]))
            if device:
                directory_device = not device.is_block_device
                if directory_device and fstype not in (Filesystem.DIRECTORY, Filesystem.TMPFS):
                    self.add_error("filesystem", f"{device} is a directory: choose directory or tmpfs.")
                if not directory_device and fstype == Filesystem.DIRECTORY:
                    self.add_error("filesystem", f"{device} is a block device: choose a filesystem to create.")
                if fstype not in (Filesystem.DIRECTORY, Filesystem.TMPFS) and not device.wipe_allowed:
                    self.add_error("device", f"{device} is not marked wipeable in the inventory.")
        self._lab_check("pg_settings", lambda: parse_settings(data.get("pg_settings", "")))
        self._check_workload(data)
        return data

    def _check_client(self, client: Host, server: Host) -> None:
        on_this_machine = [host for host in (server, client) if host.is_benchlab_server]
        if client.pk == server.pk:
            self.add_error("client_host", "Leave it empty to run pgbench on the server itself.")
        elif on_this_machine:
            self.add_error(
                "client_host",
                f"{on_this_machine[0]} is this machine, not an address on the lab network: "
                "a client host and its server must reach each other over the network.",
            )
        elif not server.address:
            self.add_error("client_host", f"{server} has no address a client host could reach it at.")
        elif not client.address:
            self.add_error("client_host", f"{client} has no address the server could let in (pg_hba).")
        elif self._lab_check("client_host", lambda: hba_address(client.address)) is None:
            return
        elif not client.pg_installs.exists():
            self.add_error("client_host", f"{client} has no PostgreSQL install, so no pgbench, in the inventory.")

    def _check_workload(self, data: dict[str, Any]) -> None:
        custom = data.get("workload") == Workload.CUSTOM
        if custom and not data.get("custom_script", "").strip():
            self.add_error("custom_script", "A custom workload needs its script.")
            return
        if not all(data.get(name) for name in ("clients", "threads", "duration_s", "query_mode")):
            return  # the field errors are already there
        options = RunOptions(
            builtin=None if custom else data.get("workload"),
            custom_script=data.get("custom_script") if custom else None,
            clients=data["clients"],
            threads=data["threads"],
            duration_s=data["duration_s"] + (data.get("warmup_s") or 0),
            query_mode=data["query_mode"],
            rate_tps=data.get("rate_limit_tps"),
            log_sampling_rate=data.get("log_sampling_rate"),
        )
        try:
            options.validate()
        except InvalidOption as exc:
            field = "threads" if "threads" in str(exc) else "custom_script" if "script" in str(exc) else None
            self.add_error(field, str(exc))


def _host_label(host: Host) -> str:
    return f"{host.name} (benchlab's own server: runs not allowed)" if host.own_server_refusal() else host.name


def run_form_initial(run: Run) -> dict[str, Any]:
    """A run's specification as the form's initial values, for "Run again"."""
    return {name: getattr(run, name) for name in RUN_FIELDS}
