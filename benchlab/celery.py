"""The Celery application; tasks live in runs/tasks.py and are found by autodiscovery."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")

app = Celery("benchlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
