from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "webapp.operations"
    label = "operations"
    verbose_name = "Live operations"
    default_auto_field = "django.db.models.BigAutoField"
