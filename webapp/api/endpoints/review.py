"""Reviewers over HTTP: the refinement queue with its filters, approve or reject with a comment."""

from __future__ import annotations

from typing import Any, Literal

from django.http import Http404, HttpRequest
from ninja import Query, Router

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import limit_param, offset_param, page, responses
from webapp.api.schemas.review import RefinementDecisionIn, RefinementOut, RefinementPage
from webapp.review import selectors
from webapp.review.models import Refinement
from webapp.review.services import refinement_decide

router = Router(tags=["review"])

StatusFilter = Literal[tuple(selectors.STATUS_FILTERS)]  # type: ignore[valid-type]
SimulationFilter = Literal[tuple(selectors.SIMULATION_FILTERS)]  # type: ignore[valid-type]


def refinement_dict(refinement: Refinement) -> dict[str, Any]:
    return {
        "id": refinement.pk,
        "run": refinement.run_id,
        "refinement_id": refinement.refinement_id,
        "step": refinement.step,
        "status": refinement.status,
        "accepted_by_simulation": refinement.accepted_by_simulation,
        "state_text": refinement.state_text,
        "rl_action_text": refinement.rl_action_text,
        "rl_reward": refinement.rl_reward,
        "rl_max_rho": refinement.rl_max_rho,
        "llm_action_text": refinement.llm_action_text,
        "llm_reward": refinement.llm_reward,
        "llm_max_rho": refinement.llm_max_rho,
        "model": refinement.model,
        "adapter_version": refinement.adapter_version,
        "reason": refinement.reason,
        "decided_by": refinement.decided_by.get_username() if refinement.decided_by_id else None,
        "decided_at": refinement.decided_at,
        "decision_comment": refinement.decision_comment,
        "created_at": refinement.created_at,
        "verdict": refinement.verdict.words,
        "verdict_why": refinement.verdict.why,
    }


@router.get("/refinements", response=responses(RefinementPage), **gate(roles.VIEW_REFINEMENTS))
def refinement_list(
    request: HttpRequest,
    status: StatusFilter = "pending",
    run: int | None = Query(None, ge=1, le=2**62, description="only this run's refinements"),
    simulation: SimulationFilter = "any",
    limit: int = limit_param(),
    offset: int = offset_param(),
) -> dict[str, Any]:
    """Refinements in the reviewer's order: oldest pending first, else newest decision first."""
    queue = selectors.refinement_queue(status=status, run_id=run, simulation=simulation)
    return page(queue, limit=limit, offset=offset, to_dict=refinement_dict)


@router.post(
    "/refinements/{refinement_id}/decision",
    response=responses(RefinementOut),
    **gate(roles.DECIDE_REFINEMENTS),
)
def refinement_decision(
    request: HttpRequest, refinement_id: int, payload: RefinementDecisionIn
) -> dict[str, Any]:
    """Approve or reject a pending refinement; decisions are final (409 when already decided)."""
    refinement = selectors.refinement_find(pk=refinement_id)
    if refinement is None:
        raise Http404(f"no refinement {refinement_id}")
    decided = refinement_decide(
        refinement=refinement,
        run=refinement.run,
        reviewer=request.user,
        decision=payload.decision,
        comment=payload.comment,
    )
    return refinement_dict(decided)
