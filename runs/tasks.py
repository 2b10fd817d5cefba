"""Celery entry points. Each task is thin: it takes ids or plain values and calls a service."""

import os
import socket
from typing import TypedDict

from celery import shared_task
from django.db import connection


class WorkerSelfCheck(TypedDict):
    hostname: str
    pid: int
    database: str | None


@shared_task(name="runs.worker_self_check")
def worker_self_check() -> WorkerSelfCheck:
    """Answer from inside a worker: who ran this, and can it reach benchlab's database?"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        row = cursor.fetchone()
    return {"hostname": socket.gethostname(), "pid": os.getpid(), "database": row[0] if row else None}
