"""The form that asks for a raw device baseline with fio (page and API alike): a device and the
lab layer's FioSettings, each setting checked by the lab layer's own rules (fio_plan), and the
device by baselines.services.baselines, so that a protected block device is refused here, before
anything is queued, with the same words as the service."""

from typing import Any

from django import forms

from runs.baselines.services.baselines import baseline_device_refusal, baseline_size_refusal, fio_settings_errors
from runs.lab.fio.plan import IOENGINES, JOB_NAMES, FioSettings, MiB
from runs.models import Device

JOB_LABELS = {
    "seq-write": "sequential write, 1 MiB blocks, QD8",
    "seq-read": "sequential read, 1 MiB blocks, QD8",
    "rand-read-qd1": "random 4k read, QD1 (IOPS and latency)",
    "rand-read-qd32": "random 4k read, QD32",
    "rand-write-qd1": "random 4k write, QD1 (IOPS and latency)",
    "rand-write-qd32": "random 4k write, QD32",
}
# The form's fields for FioSettings' (the size in MiB: 1 MiB blocks).
SETTING_FIELD = {"size_bytes": "size_mib", "runtime_s": "runtime_s", "ramp_s": "ramp_s", "jobs": "jobs",
                 "ioengine": "ioengine"}  # fmt: skip


def device_target_text(device: Device) -> str:
    """How fio would use the device, for its choice in the form."""
    if not device.is_block_device:
        return "a file in this directory"
    return "raw device, wipe allowed" if device.wipe_allowed else "protected block device: refused"


class DeviceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj} — {obj.get_kind_display()}, {device_target_text(obj)}"


class BaselineForm(forms.Form):
    device = DeviceField(
        Device.objects.filter(host__enabled=True).select_related("host").order_by("host__name", "name"),
        empty_label="– choose a device –",
        error_messages={"invalid_choice": "Choose one of the devices listed (on enabled hosts); that one is not."},
        help_text="A block device is measured raw (only one the inventory allows wiping: fio overwrites it); "
        "a directory device through a file in it (the figures then include its filesystem).",
    )
    size_mib = forms.IntegerField(
        label="Size (MiB)",
        initial=FioSettings.size_bytes // MiB,
        help_text="The region of the device (or the size of the file) fio reads and writes.",
    )
    runtime_s = forms.IntegerField(label="Runtime per test (s)", initial=FioSettings.runtime_s)
    ramp_s = forms.IntegerField(
        label="Ramp per test (s)", initial=FioSettings.ramp_s, help_text="Not measured: queues fill, caches settle."
    )
    jobs = forms.MultipleChoiceField(
        label="Tests",
        choices=[(name, JOB_LABELS[name]) for name in JOB_NAMES],
        initial=list(JOB_NAMES),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"invalid_choice": "%(value)s is not one of fio's tests here."},
    )
    ioengine = forms.ChoiceField(
        label="I/O engine", choices=[(name, name) for name in IOENGINES], initial=FioSettings.ioengine
    )

    def settings(self) -> FioSettings:
        """The settings asked for; a field that did not validate keeps fio_plan's default."""
        data, default = self.cleaned_data, FioSettings()
        jobs = data.get("jobs")
        return FioSettings(
            size_bytes=data["size_mib"] * MiB if data.get("size_mib") is not None else default.size_bytes,
            runtime_s=data["runtime_s"] if data.get("runtime_s") is not None else default.runtime_s,
            ramp_s=data["ramp_s"] if data.get("ramp_s") is not None else default.ramp_s,
            jobs=tuple(name for name in JOB_NAMES if name in jobs) if jobs is not None else default.jobs,
            ioengine=data.get("ioengine") or default.ioengine,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        settings = self.settings()  # each mistake at once, not only the form's own
        for name, message in fio_settings_errors(settings).items():
            if SETTING_FIELD[name] in data:
                self.add_error(SETTING_FIELD[name], message)
        device: Device | None = data.get("device")
        if device is not None and (refusal := baseline_device_refusal(device)):
            self.add_error("device", refusal)
        elif device is not None and not self.errors and (too_big := baseline_size_refusal(device, settings)):
            self.add_error("size_mib", too_big)
        return data
