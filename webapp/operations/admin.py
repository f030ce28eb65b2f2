"""Live sessions in the Django admin (read-only: every change goes through the services)."""

from django.contrib import admin

from webapp.operations.models import Alarm, Decision, LiveSession


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LiveSession)
class LiveSessionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "label",
        "env",
        "scenario_name",
        "status",
        "current_step",
        "created_by",
        "created_at",
    )
    list_filter = ("status", "env")
    exclude = ("layout",)


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "step", "kind", "description", "decided_by", "status", "decided_at")
    list_filter = ("kind", "status")


@admin.register(Alarm)
class AlarmAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "step", "kind", "message", "acknowledged_by", "acknowledged_at")
    list_filter = ("kind",)
