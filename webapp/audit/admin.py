"""The audit log in the admin: read-only, nothing can be added, changed or deleted."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from webapp.audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["at", "actor_name", "action", "target_repr", "comment"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor_name", "target_repr", "comment"]
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False
