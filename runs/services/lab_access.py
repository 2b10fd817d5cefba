"""From an inventory Host to a live connection to it (the only place the two layers meet)."""

from runs.lab.transport import LocalTransport, SSHTarget, SSHTransport, Transport
from runs.models import Host
from runs.ssh_keys import decrypt_private_key, parse_host_keys


def host_ssh_target(host: Host) -> SSHTarget:
    return SSHTarget(
        address=host.address,
        port=host.ssh_port,
        user=host.ssh_user,
        host_keys=[key.line for key in parse_host_keys(host.host_keys)],
        private_key_path=host.private_key_path or None,
        private_key_text=decrypt_private_key(host.private_key_encrypted) if host.private_key_encrypted else None,
    )


def host_connect(host: Host) -> Transport:
    """Open a connection to the host: SSH with its pinned keys, or local for this machine."""
    if host.is_local:
        return LocalTransport(label=host.name)
    return SSHTransport(host_ssh_target(host))
