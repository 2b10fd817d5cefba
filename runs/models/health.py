"""A device's SMART/NVMe health over time: one row per reading (runs/lab/parse/smart.py), taken
after a run on the device is collected, or when an operator asks on the device page.

A reading the device could not give (a loop device, a RAM disk, a host without smartctl) is kept
too, with every figure null and `none_reason` saying why: the page tells that, not "never read".
"""

from django.db import models

from runs.models.inventory import Device


class HealthSource(models.TextChoices):
    RUN = "run", "after a run"
    OPERATOR = "operator", "read by an operator"


class DeviceHealthReading(models.Model):
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="health_readings")
    read_at = models.DateTimeField()
    source = models.CharField(max_length=10, choices=HealthSource.choices)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    protocol = models.CharField(max_length=20, blank=True)  # "NVMe", "ATA"
    wear_pct_used = models.FloatField(null=True, blank=True)
    media_errors = models.BigIntegerField(null=True, blank=True)  # NVMe media errors; ATA reallocated sectors
    bytes_written = models.BigIntegerField(null=True, blank=True)
    power_on_hours = models.IntegerField(null=True, blank=True)
    critical_warning = models.IntegerField(null=True, blank=True)
    temperature_c = models.IntegerField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    none_reason = models.CharField(max_length=500, blank=True)  # "no SMART data: …" when no figures
    raw = models.JSONField(default=dict, blank=True)  # smartctl's JSON, whole

    class Meta:
        indexes = [models.Index(fields=["device", "read_at"], name="health_device_read_at")]

    def __str__(self) -> str:
        return f"{self.device} health at {self.read_at:%Y-%m-%d %H:%M}"
