"""ASGI entry point, served by uvicorn (scripts/web): live updates are async views streaming
server-sent events (runs/views/live.py), served without a thread each (benchlab/asgi_handler.py)."""

import os

import django

from benchlab.asgi_handler import BenchlabASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")

django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application: the prefix is set per request
application = BenchlabASGIHandler()
