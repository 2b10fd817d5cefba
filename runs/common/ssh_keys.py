"""Parsing, fingerprinting and encryption of SSH keys kept in the inventory.

Host keys are public and stored as OpenSSH `known_hosts`-style lines without the host
pattern ("ssh-ed25519 AAAA… [comment]"). Private keys are either a path on the worker
machine or a Fernet token; the plaintext never reaches the database or a page.
"""

import base64
import binascii
import io
from dataclasses import dataclass

import paramiko
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ValidationError

_PRIVATE_KEY_CLASSES: tuple[type[paramiko.PKey], ...] = (
    paramiko.Ed25519Key,
    paramiko.ECDSAKey,
    paramiko.RSAKey,
)


@dataclass(frozen=True)
class PublicKey:
    key_type: str
    fingerprint: str  # "SHA256:…", as `ssh-keygen -l` prints it
    line: str  # "<type> <base64>", the canonical stored form


def parse_host_keys(text: str) -> list[PublicKey]:
    """Parse one public key per non-empty line; raise ValidationError naming the bad line."""
    keys = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) < 2:
            raise ValidationError(f"line {number}: expected '<key type> <base64 key>', got {line!r}")
        key_type, b64 = fields[0], fields[1]
        try:
            blob = base64.b64decode(b64, validate=True)
            key = paramiko.PKey.from_type_string(key_type, blob)
            # paramiko pads a truncated key instead of refusing it; a real key re-encodes to itself.
            if key.asbytes() != blob:
                raise ValueError("the key data is truncated or has trailing bytes")
        except (binascii.Error, paramiko.SSHException, ValueError) as exc:
            raise ValidationError(f"line {number}: not a valid {key_type} public key ({exc})") from exc
        keys.append(PublicKey(key_type=key_type, fingerprint=key.fingerprint, line=f"{key_type} {b64}"))
    return keys


def load_private_key(text: str) -> paramiko.PKey:
    """Load an unencrypted OpenSSH/PEM private key of any type paramiko supports."""
    for key_class in _PRIVATE_KEY_CLASSES:
        try:
            return key_class.from_private_key(io.StringIO(text))
        except paramiko.PasswordRequiredException as exc:
            raise ValidationError("the private key is protected by a passphrase; store an unprotected key") from exc
        except (paramiko.SSHException, ValueError):
            continue
    raise ValidationError("not a private key paramiko can read (expected an OpenSSH or PEM private key)")


def _fernet() -> Fernet:
    if not settings.CREDENTIALS_KEY:
        raise ValidationError(
            "storing private keys needs CREDENTIALS_KEY (a Fernet key) in the environment; "
            "use a key path on the worker machine instead, or set CREDENTIALS_KEY"
        )
    return Fernet(settings.CREDENTIALS_KEY)


def encrypt_private_key(text: str) -> str:
    return _fernet().encrypt(text.encode()).decode("ascii")


def decrypt_private_key(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode()
    except InvalidToken as exc:
        raise ValidationError("the stored private key cannot be decrypted with the current CREDENTIALS_KEY") from exc
