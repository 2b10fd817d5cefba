"""benchlab in the Django admin: the hardware inventory (the admin role's workplace), and
accounts, API tokens, login locks and the audit log (superusers'; the log is read-only), share
links (the admin role's, to revoke), and PostgreSQL builds (read-only, with a remove action).

Django imports this package to register the pages; each module registers its own.
"""

from runs.admin import accounts, builds, inventory, shares

__all__ = ["accounts", "builds", "inventory", "shares"]
