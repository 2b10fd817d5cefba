"""What can go wrong on a lab machine, as exceptions that carry what a person needs to see."""

from collections.abc import Sequence

TAIL_LINES = 40


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


class LabError(Exception):
    """Base class: anything that failed on a lab host."""


class ConnectFailed(LabError):
    pass


class HostNotAnswering(ConnectFailed):
    """The host could not be reached (no route, refused, no SSH banner, a timeout): unlike a
    refused host key or a missing private key, waiting may help."""


class HostKeyRefused(ConnectFailed):
    """The host offered a key that is not pinned in the inventory; nothing was sent to it."""

    def __init__(self, host: str, offered: str, pinned: Sequence[str]) -> None:
        self.host, self.offered, self.pinned = host, offered, list(pinned)
        if pinned:
            message = (
                f"host key of {host} CHANGED: it offered {offered}, but the inventory pins "
                f"{', '.join(pinned)}. Refusing to connect; if the host was reinstalled, "
                "record its new key in the admin."
            )
        else:
            message = (
                f"host key of {host} is UNKNOWN: it offered {offered} and the inventory pins no key. "
                "Refusing to connect; record the host's key in the admin after checking its fingerprint."
            )
        super().__init__(message)


class ConnectionLost(LabError):
    pass


class CommandFailed(LabError):
    def __init__(self, command: str, exit_status: int, stdout: str, stderr: str, host: str) -> None:
        self.command, self.exit_status, self.stdout, self.stderr, self.host = command, exit_status, stdout, stderr, host
        output = tail(stderr) or tail(stdout)
        super().__init__(f"`{command}` on {host} exited with status {exit_status}" + (f":\n{output}" if output else ""))


class CommandTimeout(LabError):
    def __init__(self, command: str, timeout: float, host: str) -> None:
        self.command, self.timeout, self.host = command, timeout, host
        super().__init__(f"`{command}` on {host} did not finish within {timeout:g} s")


class OutputTooLarge(LabError):
    """A command printed more than benchlab keeps in memory (transport.MAX_OUTPUT_BYTES)."""


class SafetyCheckFailed(LabError):
    """A destructive step was refused because one of the device checks did not hold."""

    def __init__(self, check: str, detail: str) -> None:
        self.check, self.detail = check, detail
        super().__init__(f"refusing to format: {check}: {detail}")


class InvalidOption(LabError):
    """A user-given option (mkfs, mount, PostgreSQL setting, pgbench) is not allowed or malformed."""


class StorageFailed(LabError):
    """The device under test failed under the run (I/O errors, a full disk): the message names
    the device and quotes PostgreSQL and the kernel (diagnose.py)."""

    def __init__(
        self,
        *,
        device: str,  # as the inventory's path names it (describe() may be given a better name)
        node: str | None,
        fstype: str,
        size: str | None,  # "64 MiB", or None if unknown
        doing: str,  # what the run was doing: "loading scale 20 with pgbench -i", "measuring"
        reason: str,
        full: bool,
        hint: str = "",
        command: str = "",  # the command that failed, if one did
        exit_status: int | None = None,
        output: str = "",
    ) -> None:
        self.device, self.node, self.fstype, self.size, self.doing = device, node, fstype, size, doing
        self.reason, self.full, self.hint = reason, full, hint
        self.command, self.exit_status, self.output = command, exit_status, output
        super().__init__(self.describe(device))

    def describe(self, device_name: str) -> str:
        """The message, naming the device `device_name` (the inventory's "host:device")."""
        node = f"{self.node}, " if self.node else ""
        if self.full:
            size = f" ({self.size})" if self.size else ""
            hint = f"; {self.hint}" if self.hint else ""
            return f"device full: {device_name}{size} filled up while {self.doing}{hint}. {self.reason}"
        return f"the storage failed while {self.doing}: {device_name} ({node}{self.fstype}) — {self.reason}"
