"""The review router: a refinement (the LLM's action beside the RL action, with the reviewers'
verdict), a page of them, and a reviewer's approve or reject."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput, PageMeta
from webapp.review.models import COMMENT_MAX_LENGTH as REVIEW_COMMENT_MAX_LENGTH


class RefinementOut(Schema):
    id: int
    run: int
    refinement_id: str
    step: int
    status: str
    accepted_by_simulation: bool
    state_text: str
    rl_action_text: str
    rl_reward: float
    rl_max_rho: float
    llm_action_text: str
    llm_reward: float | None
    llm_max_rho: float | None
    model: str
    adapter_version: int
    reason: str
    decided_by: str | None
    decided_at: datetime | None
    decision_comment: str
    created_at: datetime
    verdict: str = Field(
        description="the LLM action against the RL action in the reviewers' words: \"safe and better "
        'than RL" only when it leaves no overload and beats the RL action by the documented margin, '
        '"better than RL, still unsafe" when it leaves an overload (webapp/review/evidence.py)'
    )
    verdict_why: str = Field(description="the sentence that says why")


class RefinementPage(PageMeta):
    items: list[RefinementOut]


class RefinementDecisionIn(ClientInput):
    decision: Literal["approve", "reject"]
    comment: str = Field("", pattern=NO_NUL, max_length=REVIEW_COMMENT_MAX_LENGTH)
