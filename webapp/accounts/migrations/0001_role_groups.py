"""Create the operator, engineer and reviewer groups with their permissions."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def create_role_groups(apps, schema_editor):
    from webapp.accounts.roles import ROLE_PERMISSIONS

    # Permissions are normally created after all migrations ran; groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for dotted in perms:
            app_label, codename = dotted.split(".")
            # permissions of models added later are granted by the migration that adds them
            permission = Permission.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            if permission is not None:
                wanted.append(permission)
        group.permissions.set(wanted)


def remove_role_groups(apps, schema_editor):
    from webapp.accounts.roles import ROLE_PERMISSIONS

    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLE_PERMISSIONS)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("training", "0001_initial"),
        ("review", "0001_initial"),
        ("audit", "0001_initial"),
        # the role map names the live console's permissions too
        ("operations", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_role_groups, remove_role_groups)]
