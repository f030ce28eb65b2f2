"""The administrator role: lists and lifts login lockouts, reads the security log and the audit
log. Permissions are created first (Django creates them only after all migrations ran)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ADMIN_PERMISSIONS = ("accounts.unlock_login", "accounts.view_securityevent", "audit.view_auditentry")


def create_admin_role(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="admin")
    for dotted in ADMIN_PERMISSIONS:
        app_label, codename = dotted.split(".")
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def remove_admin_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="admin").delete()


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_securityevent"), ("audit", "0001_initial")]

    operations = [migrations.RunPython(create_admin_role, remove_admin_role)]
