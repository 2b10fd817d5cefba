"""Campaign schedules in the admin: the list (name, campaign, times, enabled, last round) with
pause and resume actions through the services (checked and audited as on the pages); a schedule is
made and changed on its campaign's page, its own page or the API.

django_celery_beat's own tables are not offered here: a periodic task or crontab edited there would
leave its schedule behind and be written without an audit line (runs.schedules.services writes them).
"""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django_celery_beat import models as beat

from runs.admin.read_only import InventoryReadOnly
from runs.models import CampaignSchedule
from runs.schedules.crontab import crontab_of_row
from runs.schedules.services.schedules import ScheduleForbidden, schedule_change

for model in (beat.PeriodicTask, beat.IntervalSchedule, beat.CrontabSchedule, beat.SolarSchedule, beat.ClockedSchedule):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(CampaignSchedule)
class CampaignScheduleAdmin(InventoryReadOnly):
    list_display = ["name", "campaign", "crontab", "enabled", "last_outcome", "last_fired_at", "created_by", "page"]
    list_filter = ["enabled", "last_outcome"]
    search_fields = ["name", "campaign__name", "created_by__username"]
    list_select_related = ["campaign", "created_by", "periodic_task__crontab"]
    fields = readonly_fields = ("name", "campaign", "crontab", "enabled", "last_outcome", "last_message",
                                "last_fired_at", "created_by", "created_at", "page")  # fmt: skip
    actions = ["pause", "resume"]

    @admin.display(description="times (crontab)")
    def crontab(self, schedule: CampaignSchedule) -> str:
        row = schedule.periodic_task.crontab
        return str(crontab_of_row(row)) if row is not None else "–"

    @admin.display(description="its page")
    def page(self, schedule: CampaignSchedule) -> str:
        return format_html('<a href="{}">schedule {}</a>', reverse("schedule-detail", args=[schedule.pk]), schedule.pk)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("runs.queue_run"))

    has_resume_permission = has_pause_permission

    def _enable(self, request: HttpRequest, queryset: QuerySet[CampaignSchedule], enabled: bool) -> None:
        done, refused = 0, []
        for schedule in queryset.select_related("campaign__created_by", "created_by"):
            try:
                done += bool(schedule_change(schedule=schedule, by=request.user, request=request, enabled=enabled))
            except ScheduleForbidden as exc:
                refused.append(f"{schedule.name}: {exc}")
        self.message_user(request, f"{done} schedule(s) {'resumed' if enabled else 'paused'}.", messages.SUCCESS)
        for message in refused:
            self.message_user(request, message, messages.ERROR)

    @admin.action(description="Pause the selected schedules", permissions=["pause"])
    def pause(self, request: HttpRequest, queryset: QuerySet[CampaignSchedule]) -> None:
        self._enable(request, queryset, enabled=False)

    @admin.action(description="Resume the selected schedules", permissions=["resume"])
    def resume(self, request: HttpRequest, queryset: QuerySet[CampaignSchedule]) -> None:
        self._enable(request, queryset, enabled=True)
