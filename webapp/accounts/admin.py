"""The security log in the admin: read-only (the log prunes itself; nobody edits it)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from webapp.accounts.models import SecurityEvent


@admin.register(SecurityEvent)
class SecurityEventAdmin(admin.ModelAdmin):
    list_display = ["last_at", "kind", "status", "method", "path", "address", "username", "count"]
    list_filter = ["kind", "status"]
    search_fields = ["path", "address", "username", "token_prefix"]
    date_hierarchy = "last_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SecurityEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: SecurityEvent | None = None) -> bool:
        return False
