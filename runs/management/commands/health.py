"""Print the health report; exit 1 when a component is down (for scripts and container health checks)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.common.services.health import health_report


class Command(BaseCommand):
    help = "Check benchlab's database, Redis and Celery workers."

    def handle(self, *args: Any, **options: Any) -> None:
        report = health_report()
        for component in report.components:
            status = "up  " if component.ok else "DOWN"
            self.stdout.write(f"{status} {component.name}: {component.detail} ({component.elapsed_ms} ms)")
        if not report.ok:
            raise CommandError("benchlab is degraded")
