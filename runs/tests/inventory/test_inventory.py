import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError

from runs.models import Device, Host, PgInstall
from runs.tests.factories import make_device, make_host, make_pg_install
from runs.tests.keys import generate_key


def test_an_ssh_host_needs_an_address_and_a_key() -> None:
    host = Host(name="lab1", transport=Host.Transport.SSH)

    with pytest.raises(ValidationError) as raised:
        host.full_clean(validate_unique=False)

    assert "address" in raised.value.message_dict
    assert "private_key_path" in raised.value.message_dict


def test_a_local_host_needs_neither_address_nor_key() -> None:
    Host(name="this-machine", transport=Host.Transport.LOCAL).full_clean(validate_unique=False)


def test_a_host_cannot_have_both_a_key_path_and_a_stored_key() -> None:
    host = Host(name="lab1", address="10.0.0.1", private_key_path="/root/.ssh/id", private_key_encrypted="gAAAA")

    with pytest.raises(ValidationError, match="either a key path or a stored key"):
        host.full_clean(validate_unique=False)


def test_host_keys_are_stored_in_canonical_form(tmp_path: Path) -> None:
    key = generate_key(tmp_path)
    host = Host(name="lab1", address="10.0.0.1", private_key_path="/k", host_keys=f"\n  {key.public_line}  \n")

    host.full_clean(validate_unique=False)

    assert host.host_keys == " ".join(key.public_line.split()[:2])


def test_a_bad_host_key_is_an_error_on_that_field() -> None:
    host = Host(name="lab1", address="10.0.0.1", private_key_path="/k", host_keys="ssh-ed25519 nonsense")

    with pytest.raises(ValidationError) as raised:
        host.full_clean(validate_unique=False)

    assert list(raised.value.message_dict) == ["host_keys"]


@pytest.mark.parametrize("kind", Device.Kind.values)
def test_every_block_device_must_be_named_by_a_stable_path(kind: str) -> None:
    device = Device(host=Host(name="lab1"), name="d", kind=kind, path="/dev/sdb")

    with pytest.raises(ValidationError, match="stable path"):
        device.full_clean(exclude=["host"])


@pytest.mark.parametrize(
    "kind, path",
    [
        (Device.Kind.SSD, "/dev/disk/by-id/nvme-Samsung_SSD_980_S123"),
        (Device.Kind.VIRTUAL, "/dev/disk/by-id/benchlab-lab0-lab1-ram"),
        (Device.Kind.RAM, "/dev/disk/by-path/platform-brd-ram0"),
        (Device.Kind.VIRTUAL, "/srv/benchlab/dir-device"),
        (Device.Kind.SSD, "/mnt/nvme0/bench"),
    ],
)
def test_stable_paths_and_directories_of_their_own_are_accepted(kind: str, path: str) -> None:
    Device(host=Host(name="lab1"), name="d", kind=kind, path=path).full_clean(exclude=["host"])


@pytest.mark.parametrize(
    "kind, path, reason",
    [
        (Device.Kind.VIRTUAL, "/dev/loop7", "stable path"),
        (Device.Kind.RAM, "/dev/ram0", "stable path"),
        (Device.Kind.RAM, "/dev/shm/benchlab", "stable path"),
        (Device.Kind.SSD, "/dev/disk/by-id/../../sda", "as '/dev/sda'"),
        (Device.Kind.SSD, "/dev/disk/by-id/./x", "as '/dev/disk/by-id/x'"),
        (Device.Kind.SSD, "/dev/disk/by-id/", "trailing"),
        (Device.Kind.VIRTUAL, "/", "system directory"),
        (Device.Kind.VIRTUAL, "/etc/benchlab", "system directory (in /etc)"),
        (Device.Kind.VIRTUAL, "/var/lib/postgresql/15/main", "system directory (in /var/lib/postgresql)"),
        (Device.Kind.VIRTUAL, "/mnt", "system directory"),
        (Device.Kind.VIRTUAL, "/srv/../etc", "as '/etc'"),
        (Device.Kind.VIRTUAL, str(settings.VAR_DIR), "holds benchlab's own data"),
        (Device.Kind.VIRTUAL, str(settings.BASE_DIR), "holds benchlab's own data"),
    ],
)
def test_kernel_names_unnormalised_paths_and_system_or_benchlab_directories_are_refused(
    kind: str, path: str, reason: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(reason)):
        Device(host=Host(name="lab1"), name="d", kind=kind, path=path).full_clean(exclude=["host"])


def test_a_relative_device_path_is_refused() -> None:
    with pytest.raises(ValidationError, match="absolute path"):
        Device(host=Host(name="lab1"), name="d", kind="virtual", path="dev/sdb").full_clean(exclude=["host"])


def test_devices_are_not_wipeable_unless_someone_says_so() -> None:
    assert Device(name="d", kind="ssd", path="/dev/disk/by-id/x").wipe_allowed is False


@pytest.mark.django_db
def test_a_host_cannot_list_the_same_device_path_twice() -> None:
    host = make_host()
    make_device(host, name="a", path="/dev/disk/by-id/x")

    with pytest.raises(IntegrityError):
        make_device(host, name="b", path="/dev/disk/by-id/x")


@pytest.mark.django_db
def test_a_pg_install_is_named_by_its_label_or_by_version_and_page_size() -> None:
    host = make_host()
    default = make_pg_install(host)
    custom = make_pg_install(host, bin_dir="/opt/pg15-4k/bin", block_size=4096, label="PG 15, 4 kB pages")

    assert str(default) == "PostgreSQL 15.19 (8 kB pages) on lab1"
    assert str(custom) == "PG 15, 4 kB pages"


def test_page_sizes_outside_what_postgres_can_build_are_refused() -> None:
    pg = PgInstall(host=Host(name="lab1"), bin_dir="/usr/lib/postgresql/15/bin", version="15", block_size=3000)

    with pytest.raises(ValidationError) as raised:
        pg.full_clean(exclude=["host"])

    assert "block_size" in raised.value.message_dict
