"""App config for the audit log."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "webapp.audit"
    label = "audit"
    verbose_name = "Audit log"
