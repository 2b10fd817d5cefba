"""ASGI entry point, served by uvicorn (scripts/web); live updates use async views later."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchlab.settings")

application = get_asgi_application()
