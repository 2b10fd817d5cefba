"""Several client hosts per run: RunClient rows replace Run.client_host (each run's client host,
if it had one, becomes its client number 1, against the run's one database)."""

import django.db.models.deletion
from django.db import migrations, models


def client_host_to_run_clients(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    RunClient = apps.get_model("runs", "RunClient")
    runs = Run.objects.filter(client_host__isnull=False).values_list("pk", "client_host_id", "environment")
    RunClient.objects.bulk_create(
        RunClient(
            run_id=pk,
            host_id=host_id,
            position=1,
            database="bench",
            pgbench_version=((environment or {}).get("pgbench") or {}).get("version", ""),
            command=((environment or {}).get("pgbench") or {}).get("command", ""),
        )
        for pk, host_id, environment in runs.iterator()
    )


def run_clients_to_client_host(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    RunClient = apps.get_model("runs", "RunClient")
    for run_id, host_id in RunClient.objects.filter(position=1).values_list("run_id", "host_id").iterator():
        Run.objects.filter(pk=run_id).update(client_host_id=host_id)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0019_device_baselines"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunClient",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("position", models.PositiveSmallIntegerField()),
                ("database", models.CharField(max_length=63)),
                ("pgbench_version", models.CharField(blank=True, max_length=100)),
                ("command", models.TextField(blank=True)),
                ("started_epoch", models.FloatField(blank=True, null=True)),
                ("rtt_ms", models.FloatField(blank=True, null=True, verbose_name="round trip to the server (ms)")),
                ("exit_status", models.IntegerField(blank=True, null=True)),
                ("tps", models.FloatField(blank=True, null=True)),
                ("latency_avg_ms", models.FloatField(blank=True, null=True)),
                ("latency_stddev_ms", models.FloatField(blank=True, null=True)),
                ("latency_p50_ms", models.FloatField(blank=True, null=True)),
                ("latency_p95_ms", models.FloatField(blank=True, null=True)),
                ("latency_p99_ms", models.FloatField(blank=True, null=True)),
                ("steady_tps_mean", models.FloatField(blank=True, null=True)),
                ("summary", models.JSONField(blank=True, default=dict)),
                ("latency", models.JSONField(blank=True, default=dict)),
                (
                    "host",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="run_client_of", to="runs.host"
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="run_clients", to="runs.run"
                    ),
                ),
            ],
            options={
                "ordering": ["run", "position"],
                "constraints": [
                    models.UniqueConstraint(fields=("run", "position"), name="runclient_one_per_position"),
                    models.UniqueConstraint(fields=("run", "host"), name="runclient_host_once"),
                ],
            },
        ),
        migrations.CreateModel(
            name="RunClientSample",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("second", models.PositiveIntegerField()),
                ("tps", models.FloatField()),
                ("latency_ms", models.FloatField()),
                (
                    "run_client",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="samples", to="runs.runclient"
                    ),
                ),
            ],
            options={
                "ordering": ["run_client", "second"],
                "constraints": [
                    models.UniqueConstraint(fields=("run_client", "second"), name="runclientsample_one_per_second")
                ],
            },
        ),
        migrations.AddField(
            model_name="run",
            name="shared_database",
            field=models.BooleanField(
                default=False,
                help_text="All client hosts run against one database; otherwise each has its own (bench_1, bench_2, …).",
                verbose_name="one database for all client hosts",
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="start_skew_ms",
            field=models.FloatField(blank=True, null=True, verbose_name="start skew between client hosts (ms)"),
        ),
        migrations.RunPython(client_host_to_run_clients, run_clients_to_client_host),
        migrations.RemoveField(model_name="run", name="client_host"),
        migrations.AddField(
            model_name="run",
            name="client_hosts",
            field=models.ManyToManyField(
                blank=True,
                help_text="Run pgbench on these hosts over TCP, all at once; none: on the server itself.",
                related_name="client_runs",
                through="runs.RunClient",
                to="runs.host",
            ),
        ),
    ]
