"""Give the role groups the live console's permissions on databases created before it existed
(fresh databases get them from accounts.0001, which runs after operations.0001)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    from webapp.accounts.roles import ROLE_PERMISSIONS

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        for dotted in perms:
            app_label, codename = dotted.split(".")
            if app_label == "operations":
                group.permissions.add(
                    Permission.objects.get(content_type__app_label=app_label, codename=codename)
                )


class Migration(migrations.Migration):
    dependencies = [("operations", "0001_initial"), ("accounts", "0001_role_groups")]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
