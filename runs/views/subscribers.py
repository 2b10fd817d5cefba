"""A schedule's subscribers on its page: added (a webhook's secret is shown on the next page, once)
and removed, by who may change the schedule (runs.schedules.services.schedules.schedule_refusal)."""

from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs.models import ScheduleSubscriber
from runs.notify.services.subscribers import SubscriberRefused, subscriber_add, subscriber_remove
from runs.schedules.services.schedules import schedule_refusal
from runs.views.refusals import refused
from runs.views.schedules import _detail, _schedule, secret_key


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def subscriber_add_view(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = _schedule(schedule_id)
    if refusal := schedule_refusal(request.user, schedule, "subscribe to"):
        return refused(request, refusal, status=403)
    email, url = request.POST.get("email", ""), request.POST.get("webhook_url", "")
    try:
        made = subscriber_add(schedule=schedule, email=email, webhook_url=url, actor=request.user, request=request)
    except SubscriberRefused as exc:
        context = _detail(request, schedule) | {"subscribe_errors": exc.errors, "subscribe_input": request.POST}
        return render(request, "runs/schedule_detail.html", context, status=400)
    if made.secret:  # shown by the page the browser is sent to, once (a reload does not post again)
        request.session[secret_key(schedule.pk)] = made.secret
    return redirect("schedule-detail", schedule_id=schedule.pk)


@require_POST
@permission_required("runs.queue_run", raise_exception=True)
def subscriber_remove_view(request: HttpRequest, schedule_id: int, subscriber_id: int) -> HttpResponse:
    subscriber = get_object_or_404(ScheduleSubscriber, pk=subscriber_id, schedule_id=schedule_id)
    if refusal := schedule_refusal(request.user, subscriber.schedule, "unsubscribe from"):
        return refused(request, refusal, status=403)
    subscriber_remove(subscriber=subscriber, actor=request.user, request=request)
    return redirect("schedule-detail", schedule_id=schedule_id)
