"""Real SSH keys made by ssh-keygen, for tests that need them."""

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedKey:
    private_text: str
    public_line: str  # "<type> <base64> <comment>"
    fingerprint: str  # as `ssh-keygen -l` prints it, e.g. "SHA256:…"


def generate_key(directory: Path, key_type: str = "ed25519", name: str = "key") -> GeneratedKey:
    path = directory / name
    subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", "test", "-f", str(path)], check=True)
    listing = subprocess.run(["ssh-keygen", "-l", "-f", str(path)], check=True, capture_output=True, text=True)
    return GeneratedKey(
        private_text=path.read_text(),
        public_line=path.with_suffix(".pub").read_text().strip(),
        fingerprint=listing.stdout.split()[1],
    )
