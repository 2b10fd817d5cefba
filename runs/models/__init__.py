from runs.models.access import Access
from runs.models.inventory import BLOCK_SIZES, WAL_BLOCK_SIZES, Device, Host, PgInstall

__all__ = ["BLOCK_SIZES", "WAL_BLOCK_SIZES", "Access", "Device", "Host", "PgInstall"]
