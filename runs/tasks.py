"""Celery entry points. Each task is thin: it takes ids or plain values and calls a service."""

import os
import socket

from celery import shared_task
from django.db import connection


@shared_task(name="runs.worker_self_check")
def worker_self_check() -> dict[str, object]:
    """Answer from inside a worker: who ran this, and can it reach benchlab's database?"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        row = cursor.fetchone()
    return {"hostname": socket.gethostname(), "pid": os.getpid(), "database": row[0] if row else None}
