"""The name a job (a run, a PostgreSQL build, a fio baseline) has on a lab host: its kind, its
id and 12 hex digits of its own UUID, so that the directories and mounts of two jobs never
collide even across two benchlab databases driving one host. The lab layer checks the
characters (benchmark_spec.py); this is the one place that builds it."""

import uuid


def host_job_key(kind: str, pk: int, key: uuid.UUID) -> str:
    return f"{kind}-{pk}-{key.hex[:12]}"
