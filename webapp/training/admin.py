"""Training runs in the Django admin: launch a run (the same fields and checks as the launch
page), watch them, cancel the selected ones. Runs are never edited; services do every write."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from ace_core.config import config_fields
from webapp.accounts import roles
from webapp.training.forms.launch import clean_config
from webapp.training.forms.launch_fields import config_form_fields
from webapp.training.models import Checkpoint, Deployment, Evaluation, TrainingRun
from webapp.training.services.runs import run_cancel, run_launch

CONFIG_NAMES = [field.name for field in config_fields()]


def launch_form_class() -> type[forms.ModelForm]:
    """Built on demand: the env choices come from grid2op, too slow to import with the admin."""

    class Meta:
        model = TrainingRun
        fields = ["label"]

    def clean(self: forms.ModelForm) -> dict[str, Any]:
        return clean_config(self, forms.ModelForm.clean(self))

    return type(
        "RunLaunchAdminForm", (forms.ModelForm,), {**config_form_fields(), "Meta": Meta, "clean": clean}
    )


class CheckpointInline(admin.TabularInline):
    model = Checkpoint
    fields = ["step", "path", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "label",
        "env",
        "status",
        "progress_step",
        "total_steps",
        "launched_by",
        "created_at",
    ]
    list_filter = ["status", "env"]
    search_fields = ["label", "env", "launched_by__username"]
    readonly_fields = [field.name for field in TrainingRun._meta.fields]
    inlines = [CheckpointInline]
    actions = ["cancel_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(roles.LAUNCH_RUNS)

    def has_launch_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(roles.LAUNCH_RUNS)

    def has_change_permission(self, request: HttpRequest, obj: TrainingRun | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: TrainingRun | None = None) -> bool:
        return False

    def get_inlines(self, request: HttpRequest, obj: TrainingRun | None) -> list:
        return self.inlines if obj is not None else []

    def get_form(
        self, request: HttpRequest, obj: TrainingRun | None = None, change: bool = False, **kwargs: Any
    ):
        if obj is None:
            return launch_form_class()
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: TrainingRun | None = None):
        if obj is None:
            return [(None, {"fields": ["label"]}), ("Run configuration", {"fields": CONFIG_NAMES})]
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: TrainingRun | None = None) -> list[str]:
        return self.readonly_fields if obj is not None else []

    def save_model(self, request: HttpRequest, obj: TrainingRun, form: forms.ModelForm, change: bool) -> None:
        if change:
            raise PermissionDenied("runs are not edited; launch a new run instead")
        run = run_launch(
            config=form.cleaned_data["config"], launched_by=request.user, label=form.cleaned_data["label"]
        )
        obj.pk = run.pk
        obj.refresh_from_db()

    @admin.action(description="Cancel selected runs", permissions=["launch"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[TrainingRun]) -> None:
        done, refused = 0, []
        for run in queryset:
            try:
                run_cancel(run=run, user=request.user)
                done += 1
            except ValidationError as error:
                refused.append(" ".join(error.messages))
        if done:
            self.message_user(request, f"{done} run(s) cancelled or stopping", messages.SUCCESS)
        for message in refused:
            self.message_user(request, message, messages.WARNING)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Deployment)
class DeploymentAdmin(ReadOnlyAdmin):
    list_display = [
        "deployed_at",
        "checkpoint",
        "deployed_by",
        "evaluation",
        "override_reason",
        "rollback_of",
    ]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "split", "nb_episode", "status", "created_at", "finished_at"]
    list_filter = ["status", "split"]
