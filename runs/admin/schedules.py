"""Campaign schedules in the admin: the list (name, campaign, times, enabled, last round) with
pause and resume actions, and a schedule made, changed (name, times, paused) and deleted, all
through the services (runs.schedules.services: checked and audited as on the pages and the API).
The times are the pages' own fields (runs.forms.schedules.ScheduleTimes): a preset or a crontab.

django_celery_beat's own tables are not offered here: a periodic task or crontab edited there would
leave its schedule behind and be written without an audit line (runs.schedules.services writes them).
"""

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django_celery_beat import models as beat

from runs.admin.read_only import InventoryReadOnly
from runs.campaigns.services.campaigns import campaign_owner_refusal
from runs.forms.schedules import ScheduleTimes, times_initial
from runs.models import CampaignSchedule
from runs.schedules.crontab import FIELD_NAMES, crontab_of_row
from runs.schedules.names import NAME_MAX, validate_schedule_name
from runs.schedules.services.schedules import (
    ScheduleForbidden,
    schedule_change,
    schedule_create,
    schedule_delete,
    schedule_refusal,
)

for model in (beat.PeriodicTask, beat.IntervalSchedule, beat.CrontabSchedule, beat.SolarSchedule, beat.ClockedSchedule):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


class ScheduleAdminForm(ScheduleTimes, forms.ModelForm):
    """Name, campaign (when made) and times; what is written, the services write (save_model)."""

    class Media:
        js = ["js/schedule_form.js"]

    user: AbstractBaseUser | AnonymousUser  # set by CampaignScheduleAdmin.get_form

    name = forms.CharField(max_length=NAME_MAX, validators=[validate_schedule_name])

    class Meta:
        model = CampaignSchedule
        fields = ["name", "campaign", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.periodic_task.crontab is not None:
            self.initial.update(times_initial(crontab_of_row(self.instance.periodic_task.crontab)))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        campaign = data.get("campaign")
        if (
            self.instance.pk is None
            and campaign
            and (refusal := campaign_owner_refusal(self.user, campaign, "schedule"))
        ):
            self.add_error("campaign", refusal)
        return data


# Two fieldsets: static/js/schedule_form.js shows the crontab one only while "crontab" is chosen.
TIMES = [
    ("Times", {"fields": ["times"], "description": "A preset, or a crontab (below)."}),
    ("Crontab", {"fields": [tuple(FIELD_NAMES)], "classes": ["crontab-fields"]}),
]


@admin.register(CampaignSchedule)
class CampaignScheduleAdmin(InventoryReadOnly):
    form = ScheduleAdminForm
    list_display = ["name", "campaign", "crontab", "enabled", "last_outcome", "last_fired_at", "created_by", "page"]
    list_filter = ["enabled", "last_outcome"]
    search_fields = ["name", "campaign__name", "created_by__username"]
    list_select_related = ["campaign", "created_by", "periodic_task__crontab"]
    readonly_fields = ("campaign_shown", "crontab", "last_outcome", "last_message", "last_fired_at",
                       "created_by", "created_at", "page")  # fmt: skip
    raw_id_fields = ["campaign"]  # by id: a lab has thousands of campaigns
    actions = ["pause", "resume"]

    def get_fieldsets(self, request: HttpRequest, obj: CampaignSchedule | None = None) -> Any:
        if obj is None:
            return [(None, {"fields": ["name", "campaign"]}), *TIMES]
        rounds = ("Rounds", {"fields": ["last_outcome", "last_message", "last_fired_at", "created_by", "created_at"]})
        if not self.has_change_permission(request, obj):  # shown, all read-only: the times as a crontab
            return [(None, {"fields": ["name", "campaign_shown", "crontab", "enabled", "page"]}), rounds]
        return [(None, {"fields": ["name", "campaign_shown", "enabled", "page"]}), *TIMES, rounds]

    def get_form(
        self, request: HttpRequest, obj: CampaignSchedule | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = cast(type[ScheduleAdminForm], super().get_form(request, obj, change=change, **kwargs))
        form.user = request.user  # a class made for this request (modelform_factory)
        return form

    def save_model(self, request: HttpRequest, obj: CampaignSchedule, form: Any, change: bool) -> None:
        name, crontab = form.cleaned_data["name"], form.crontab()
        if change:
            enabled = form.cleaned_data["enabled"]
            schedule_change(schedule=obj, by=request.user, request=request, name=name, crontab=crontab, enabled=enabled)
        else:
            made = schedule_create(
                campaign=form.cleaned_data["campaign"], name=name, crontab=crontab, by=request.user, request=request
            )
            obj.pk = made.pk  # the admin's own log line and redirect name it

    def delete_model(self, request: HttpRequest, obj: CampaignSchedule) -> None:
        schedule_delete(schedule=obj, by=request.user, request=request)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[CampaignSchedule]) -> None:
        for schedule in queryset.select_related("campaign__created_by", "created_by", "periodic_task"):
            self.delete_model(request, schedule)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("runs.queue_run"))

    def has_change_permission(self, request: HttpRequest, obj: CampaignSchedule | None = None) -> bool:
        allowed = request.user.has_perm("runs.queue_run")
        return bool(allowed and (obj is None or schedule_refusal(request.user, obj, "change") is None))

    has_delete_permission = has_change_permission

    @admin.display(description="campaign repeated")
    def campaign_shown(self, schedule: CampaignSchedule) -> str:
        url = reverse("campaign-detail", args=[schedule.campaign_id])
        return format_html('<a href="{}">{}</a>', url, schedule.campaign)

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
