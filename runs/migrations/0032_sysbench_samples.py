from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0031_warmup_run")]

    operations = [
        migrations.AlterField(model_name="runsample", name="latency_ms", field=models.FloatField(null=True)),
        migrations.AddField(model_name="runsample", name="qps", field=models.FloatField(null=True)),
        migrations.AddField(model_name="runsample", name="latency_p95_ms", field=models.FloatField(null=True)),
    ]
