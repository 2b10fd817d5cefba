"""The workload library's shipped scripts in the database.

shipped_scripts_sync() runs after every `migrate` (runs/apps.py), and so in every fresh test
database and after a test flushes the tables: each shipped (name, version) the database lacks is
written from runs/lab/pgbench/library/shipped.py. A row that exists is left as it is: a version,
once written, is what runs ran.
"""

from typing import Any

from runs.lab.pgbench.library.shipped import SHIPPED
from runs.models import WorkloadScript


def shipped_scripts_sync(**_signal: Any) -> int:
    """Write the shipped scripts the database lacks; how many were written."""
    existing = set(WorkloadScript.objects.values_list("name", "version"))
    missing = [shipped for shipped in SHIPPED if (shipped.name, shipped.version) not in existing]
    WorkloadScript.objects.bulk_create(
        WorkloadScript(
            name=shipped.name,
            version=shipped.version,
            title=shipped.title,
            description=shipped.description,
            script=shipped.script,
            parameters=[parameter.as_json() for parameter in shipped.parameters],
            shipped=True,
        )
        for shipped in missing
    )
    return len(missing)
