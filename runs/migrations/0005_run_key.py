import uuid
from typing import Any

from django.db import migrations, models


def give_every_run_a_key(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("runs", "Run")
    for run in Run.objects.filter(key__isnull=True).only("pk"):
        run.key = uuid.uuid4()
        run.save(update_fields=["key"])


class Migration(migrations.Migration):
    dependencies = [("runs", "0004_run_failed_step_choices")]

    operations = [
        migrations.AddField(model_name="run", name="key", field=models.UUIDField(null=True, editable=False)),
        migrations.RunPython(give_every_run_a_key, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="run",
            name="key",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
