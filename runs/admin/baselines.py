"""fio baselines in the admin: read-only (queued from a device's page, the form or the API, and
changed only by their worker), each linking to its page."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from runs.admin.read_only import InventoryReadOnly
from runs.models import DeviceBaseline


@admin.register(DeviceBaseline)
class DeviceBaselineAdmin(InventoryReadOnly):
    list_display = ["__str__", "device", "host", "state", "target_mode", "queued_by", "created_at", "page"]
    list_filter = ["state", "target_mode", "host"]
    search_fields = ["device__name", "host__name", "target_description"]
    list_select_related = ["device__host", "host", "queued_by"]
    exclude = ["fio_json"]  # whole on the baseline's page, as a download
    readonly_fields = ["page"]

    @admin.display(description="its page")
    def page(self, baseline: DeviceBaseline) -> str:
        return format_html('<a href="{}">baseline {}</a>', reverse("baseline-detail", args=[baseline.pk]), baseline.pk)
