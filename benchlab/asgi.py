"""ASGI entry point, served by uvicorn (scripts/web): live updates are async views streaming
server-sent events (runs/views/live.py)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")

application = get_asgi_application()
