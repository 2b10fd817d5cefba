"""benchlab in the Django admin: the hardware inventory (the admin role's workplace), and
accounts, API tokens, login locks and the audit log (superusers'; the log is read-only), share
links (the admin role's, to revoke), PostgreSQL builds (read-only, with a remove action) and
fio baselines (read-only), campaign schedules (pause and resume), and the workload library (its
used versions read-only).

Django imports this package to register the pages; each module registers its own.
"""

from runs.admin import accounts, baselines, builds, inventory, schedules, shares, workloads

__all__ = ["accounts", "baselines", "builds", "inventory", "schedules", "shares", "workloads"]
