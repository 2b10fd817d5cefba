from typing import Any

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Frozen here (see 0002_roles): what the admin role gains with issue 9's changes.
ADMIN_GAINS = ["runs.cancel_any_run", "runs.view_auditevent"]


def grant(apps: Any, schema_editor: Any) -> None:
    app_config = apps.get_app_config("runs")
    app_config.models_module = True
    create_permissions(app_config, verbosity=0, apps=apps)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin, _ = Group.objects.get_or_create(name="admin")
    for code in ADMIN_GAINS:
        app_label, codename = code.split(".")
        admin.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def revoke(apps: Any, schema_editor: Any) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for admin in Group.objects.filter(name="admin"):
        admin.permissions.remove(*Permission.objects.filter(codename__in=[c.split(".")[1] for c in ADMIN_GAINS]))


# API tokens were DRF's, stored in plain text; they are knox's now, stored as hashes. The old
# table would keep every token that was ever issued readable in the database: drop it (its
# tokens stopped working when the app was removed; admins issue new ones).
DROP_PLAIN_TEXT_TOKENS = """
DROP TABLE IF EXISTS authtoken_token;
DELETE FROM django_migrations WHERE app = 'authtoken';
"""


class Migration(migrations.Migration):
    dependencies = [("runs", "0008_security")]

    operations = [
        migrations.RunPython(grant, revoke),
        migrations.RunSQL(DROP_PLAIN_TEXT_TOKENS, migrations.RunSQL.noop),
    ]
