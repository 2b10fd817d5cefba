"""Which devices: the API's device list by host, in the run list's words (runs.common.filters)."""

from runs.common.fields import InventoryChoiceField
from runs.common.filters import FieldFilter, StrictFilterSet
from runs.models import Device, Host


class DeviceFilter(StrictFilterSet):
    host = FieldFilter(InventoryChoiceField(Host.objects.only("id", "name"), "host", "Host"), field_name="host")

    class Meta(StrictFilterSet.Meta):
        model = Device
        fields: list[str] = []  # declared above
