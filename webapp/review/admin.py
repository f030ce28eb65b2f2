"""Refinements in the admin: read-only, with bulk approve / reject through the decision service
(refinements already decided are skipped and reported)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from webapp.accounts import roles
from webapp.review.models import Refinement, RefinementRound, RewardShaping
from webapp.review.services import DECISIONS, refinement_decide


class RoundInline(admin.StackedInline):
    model = RefinementRound
    fields = [
        "number",
        "action_index",
        "simulated_reward",
        "simulated_max_rho",
        "accepted",
        "error",
        "prompt",
        "response",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Refinement)
class RefinementAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "refinement_id",
        "step",
        "accepted_by_simulation",
        "status",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["status", "accepted_by_simulation", "run"]
    search_fields = ["refinement_id", "llm_action_text", "rl_action_text"]
    readonly_fields = [field.name for field in Refinement._meta.fields]
    inlines = [RoundInline]
    actions = ["approve_selected", "reject_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Refinement | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Refinement | None = None) -> bool:
        return False

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(roles.DECIDE_REFINEMENTS)

    def _decide_all(self, request: HttpRequest, queryset: QuerySet[Refinement], decision: str) -> None:
        done, refused = 0, []
        for refinement in queryset.select_related("run"):
            try:
                refinement_decide(
                    refinement=refinement, run=refinement.run, reviewer=request.user, decision=decision
                )
                done += 1
            except ValidationError as error:
                refused.append(" ".join(error.messages))
        if done:
            self.message_user(request, f"{done} refinement(s) {DECISIONS[decision].value}", messages.SUCCESS)
        for message in refused:
            self.message_user(request, message, messages.WARNING)

    @admin.action(description="Approve selected refinements", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Refinement]) -> None:
        self._decide_all(request, queryset, "approve")

    @admin.action(description="Reject selected refinements", permissions=["decide"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Refinement]) -> None:
        self._decide_all(request, queryset, "reject")


@admin.register(RewardShaping)
class RewardShapingAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "step", "episode_index", "trajectory_step", "adjustment", "model"]
    list_filter = ["run"]
    search_fields = ["rationale"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: RewardShaping | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: RewardShaping | None = None) -> bool:
        return False
