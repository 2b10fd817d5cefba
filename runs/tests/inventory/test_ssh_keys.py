from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from runs.common.ssh_keys import decrypt_private_key, encrypt_private_key, load_private_key, parse_host_keys
from runs.tests.keys import generate_key


@pytest.mark.parametrize("key_type", ["ed25519", "ecdsa", "rsa"])
def test_it_fingerprints_host_keys_like_ssh_keygen(tmp_path: Path, key_type: str) -> None:
    key = generate_key(tmp_path, key_type)

    (parsed,) = parse_host_keys(key.public_line)

    assert parsed.fingerprint == key.fingerprint
    assert parsed.line == " ".join(key.public_line.split()[:2])  # the comment is dropped


def test_it_skips_blank_and_comment_lines(tmp_path: Path) -> None:
    first, second = generate_key(tmp_path, name="a"), generate_key(tmp_path, "rsa", name="b")

    keys = parse_host_keys(f"# lab1\n\n{first.public_line}\n{second.public_line}\n")

    assert [k.fingerprint for k in keys] == [first.fingerprint, second.fingerprint]


@pytest.mark.parametrize(
    "text, message",
    [
        ("ssh-ed25519", "line 1: expected"),
        ("ssh-ed25519 not-base64!", "line 1: not a valid ssh-ed25519"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOqf", "line 1: not a valid"),
    ],
)
def test_it_refuses_malformed_host_keys_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_host_keys(text)


@pytest.mark.parametrize("key_type", ["ed25519", "ecdsa", "rsa"])
def test_it_loads_private_keys_of_each_type(tmp_path: Path, key_type: str) -> None:
    key = generate_key(tmp_path, key_type)

    loaded = load_private_key(key.private_text)

    assert loaded.fingerprint == key.fingerprint


def test_it_refuses_passphrase_protected_and_garbage_private_keys(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(tmp_path / "p")], check=True)
    with pytest.raises(ValidationError, match="passphrase"):
        load_private_key((tmp_path / "p").read_text())
    with pytest.raises(ValidationError, match="not a private key"):
        load_private_key("hello")


def test_encryption_round_trips_and_never_contains_the_plaintext(tmp_path: Path) -> None:
    key = generate_key(tmp_path)

    token = encrypt_private_key(key.private_text)

    body = key.private_text.splitlines()[1]
    assert body not in token
    assert decrypt_private_key(token) == key.private_text


def test_it_refuses_to_store_keys_without_a_credentials_key(tmp_path: Path) -> None:
    with override_settings(CREDENTIALS_KEY=None), pytest.raises(ValidationError, match="CREDENTIALS_KEY"):
        encrypt_private_key(generate_key(tmp_path).private_text)


def test_a_token_from_another_credentials_key_is_refused(tmp_path: Path) -> None:
    from cryptography.fernet import Fernet

    with override_settings(CREDENTIALS_KEY=Fernet.generate_key().decode()):
        token = encrypt_private_key(generate_key(tmp_path).private_text)
    with pytest.raises(ValidationError, match="cannot be decrypted"):
        decrypt_private_key(token)
