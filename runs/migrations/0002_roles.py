from typing import Any

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Frozen here, not imported from runs.roles: a migration must keep meaning what it meant
# when it was written; later changes to the roles come as later migrations.
_READ = ["runs.view_host", "runs.view_device", "runs.view_pginstall"]
_OPERATE = ["runs.queue_run", "runs.cancel_run"]
_INVENTORY = [f"runs.{a}_{m}" for m in ("host", "device", "pginstall") for a in ("add", "change", "delete")]
ROLE_PERMISSIONS = {"viewer": _READ, "operator": _READ + _OPERATE, "admin": _READ + _OPERATE + _INVENTORY}


def create_role_groups(apps: Any, schema_editor: Any) -> None:
    # Permissions are normally created after all migrations; create this app's now so the
    # groups can be given them in the same `migrate` that creates the tables.
    app_config = apps.get_app_config("runs")
    app_config.models_module = True
    create_permissions(app_config, verbosity=0, apps=apps)
    app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codes in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        for code in codes:
            app_label, codename = code.split(".")
            group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def remove_role_groups(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_PERMISSIONS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_role_groups, remove_role_groups)]
