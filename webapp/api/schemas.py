"""The API's request and response bodies (pydantic, via django-ninja's Schema).

Response schemas mirror the JSON the pages already send (``webapp.live.session_messages``,
``webapp.live.run_messages``), so a console and an API client read the same fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from webapp.operations.services import COMMENT_MAX_LENGTH as DECISION_COMMENT_MAX_LENGTH
from webapp.review.models import COMMENT_MAX_LENGTH as REVIEW_COMMENT_MAX_LENGTH
from webapp.training.services.deployment import COMMENT_MAX_LENGTH as DEPLOY_COMMENT_MAX_LENGTH
from webapp.training.services.deployment import OVERRIDE_MAX_LENGTH
from webapp.training.services.runs import LABEL_MAX_LENGTH
from webapp.validation import DB_INT_MAX

NO_NUL = r"^[^\x00]*$"
"""text a client sends must not hold NUL characters (PostgreSQL text cannot store them)"""


class ClientInput(Schema):
    """A body a client sends: typed strictly (``" 5"``, ``"+5"``, ``5.0`` and ``true`` are not
    integers, as in the forms) and closed (an unknown key is refused with 422, naming it, rather
    than ignored: ``{"confg": ...}`` must not launch a default run)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class PageMeta(Schema):
    count: int = Field(description="items matching the filters, over all pages")
    limit: int
    offset: int


# ----- operations ------------------------------------------------------------------------------
class SessionOut(Schema):
    id: int
    label: str
    env: str
    scenario: str
    status: str
    speed_seconds: float
    current_step: int
    decisions_open: bool
    end_reason: str
    resumes: int
    revision: int


class SessionPage(PageMeta):
    items: list[SessionOut]


class RecommendationOut(Schema):
    id: int
    step: int = Field(
        description="the step its figures are for: a card is re-simulated at each step it lasts"
    )
    first_step: int = Field(
        description="the step it first appeared; decide on it with any step from this one on"
    )
    rank: int
    action: dict[str, Any] = Field(description="the action, as the what-if and apply endpoints take it")
    description: str
    confidence: float
    source: str
    max_rho_before: float = Field(description="the grid's max rho now")
    max_rho_after: float | None = Field(description="simulated max rho one step after playing it")
    lines_relieved: list[int] = Field(description="overloaded lines the simulation relieves")
    new_overloads: list[int] = Field(description="lines the simulation overloads")
    error: str = Field(description="why the simulation refused it (empty when playable)")
    figures: dict[str, Any] = Field(
        default_factory=dict,
        description="sources, substations touched, outcome in words, overloads after, N-1 "
        "(status, worst outage and line, lines at risk) and look-ahead (max rho per step, "
        "first overload, the forecast used)",
    )
    status: str
    explanation_status: str
    explanation: str
    explanation_model: str
    expired_because: str = Field("", description="why it expired (empty while open)")


class AlarmOut(Schema):
    id: int
    step: int
    kind: str
    severity: str = Field(description="critical (failing now), warning (will or could) or info (planned)")
    line: int | None
    message: str
    raised_at: str
    acknowledged_by: str | None
    acknowledged_at: str | None


class DecisionOut(Schema):
    id: int
    step: int
    kind: str
    recommendation: int | None
    description: str
    decided_by: str
    decided_at: str
    status: str
    applied_step: int | None
    outcome: dict[str, Any]
    figures_seen: dict[str, Any] = Field(
        default_factory=dict,
        description="the simulated figures the operator saw when deciding (the card's or what-if's, "
        "and the grid's N-1 status and look-ahead)",
    )


class TimelineOut(Schema):
    step: list[int]
    max_rho: list[float]
    overloads: list[int]


class StateOut(Schema):
    """The console's snapshot message: the session, its panels, the drawing, the state, the timeline."""

    kind: str
    session: SessionOut
    recommendations: list[RecommendationOut]
    assessment: dict[str, Any] = Field(
        default_factory=dict,
        description="doing nothing's outcome (the reference), the candidates rejected by "
        "simulation with the reason, the grid's N-1 status and look-ahead, the forecast used",
    )
    alarms: list[AlarmOut]
    decisions: list[DecisionOut]
    layout: dict[str, Any]
    state: dict[str, Any] | None
    timeline: TimelineOut
    cursor: int = Field(description="the last recorded step (-1: not started)")


class RecommendationsOut(Schema):
    session: int
    step: int = Field(description="the step these recommendations are for (decide on this step)")
    decisions_open: bool
    items: list[RecommendationOut]


class RecommendationDecisionIn(ClientInput):
    decision: Literal["accept", "reject"]
    step: int = Field(
        ge=0, le=DB_INT_MAX, description="the current step, as the recommendations endpoint gave it"
    )
    comment: str = Field("", pattern=NO_NUL, max_length=DECISION_COMMENT_MAX_LENGTH)


class WhatIfIn(ClientInput):
    step: int = Field(ge=0, le=DB_INT_MAX, description="the step whose state the action is simulated from")
    action: dict[str, Any] = Field(
        description='e.g. {"kind": "nothing"}, {"kind": "line", "line": 3, "status": "reconnect"}, '
        '{"kind": "topology", "substation": 4, "set": [[2, 2]]}, {"kind": "index", "index": 17}'
    )


class WhatIfOut(Schema):
    action: dict[str, Any]
    description: str
    legal: bool
    refusal: str
    max_rho_before: float
    max_rho_after: float | None
    overloads_after: list[int]
    lines_relieved: list[int]
    new_overloads: list[int]
    rho_after: list[float]
    figures: dict[str, Any] = Field(
        default_factory=dict,
        description="as a recommendation's: outcome in words, N-1 and look-ahead, and "
        "rejected_because when the action is worse than doing nothing (empty when refused)",
    )
    step: int
    stale: bool


# ----- training --------------------------------------------------------------------------------
class BestPolicyOut(Schema):
    survival: float = Field(description="its mean survival on the validation days")
    step: int = Field(description="the environment step the trainer validated it at")
    decisions: int | None = Field(description="the run's decisions then (null: a run older than that metric)")
    validations: int = Field(description="how many validations the run has reported")
    is_starting_policy: bool = Field(
        description="no later validation beat the first: best.pt is the policy the run started from "
        "(its clone or fresh networks), and deploying the run deploys that policy"
    )


class RunOut(Schema):
    id: int
    label: str
    env: str
    status: str
    total_steps: int
    progress_step: int
    attempt: int
    cancel_requested: bool
    launched_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str
    config: dict[str, Any]
    best_validation_survival: float | None = Field(
        description="the best mean survival of the run's policy on validation days, over its "
        "validation evaluations and the trainer's validations (null: neither yet)"
    )
    best_policy: BestPolicyOut | None = Field(
        description="best.pt as the trainer's validations saw it (null: not validated yet)"
    )


class RunPage(PageMeta):
    items: list[RunOut]


class RunLaunchIn(ClientInput):
    label: str = Field("", pattern=NO_NUL, max_length=LABEL_MAX_LENGTH)
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="TrainConfig fields to set (the launch form's fields); the others keep their defaults",
    )


class MetricPointOut(Schema):
    id: int
    step: int
    values: dict[str, Any]


class MetricsOut(Schema):
    run: int
    items: list[MetricPointOut]
    next_after: int = Field(description="pass as ?after= to get the points recorded since")


# ----- deployment ------------------------------------------------------------------------------
class OutcomeOnTestDaysOut(Schema):
    evaluation: int = Field(description="the finished evaluation on test days read")
    episodes: int
    policy: str = Field(
        description="ace-checked (the policy as deployed, checked by simulation) or ace (the plain "
        "policy, when the evaluation did not play the checked one)"
    )
    survival: float | None = Field(description="the policy's mean fraction of the steps survived")
    do_nothing_survival: float | None = Field(description="do-nothing's, on the same episodes")
    simulations_per_step: float | None
    at_least_do_nothing: bool


class DeployCheckOut(Schema):
    run: int
    checkpoint_step: int = Field(description="the run's last checkpoint, the one a deploy serves")
    passed: bool = Field(description="a deploy needs no override")
    refusal: str = Field(description="what is missing for a deploy without an override (empty: nothing)")
    outcome: OutcomeOnTestDaysOut | None = Field(
        description="the newest finished evaluation of that checkpoint on test days (null: none)"
    )


class DeploymentOut(Schema):
    id: int
    run: int
    checkpoint_step: int
    deployed_by: str
    deployed_at: datetime
    comment: str
    evaluation: int | None = Field(description="the finished test evaluation the guard read (null: none)")
    override_reason: str = Field(
        description="why it was deployed although the guard refused (empty: it passed)"
    )
    rollback_of: int | None = Field(description="the deployment this one rolled back (null: a deploy)")
    previous: int | None = Field(description="where a rollback of this one returns (null: nowhere)")
    current: bool = Field(description="the policy live sessions use now")


class DeploymentPage(PageMeta):
    items: list[DeploymentOut]


class DeployIn(ClientInput):
    comment: str = Field("", pattern=NO_NUL, max_length=DEPLOY_COMMENT_MAX_LENGTH)
    override_reason: str = Field(
        "",
        pattern=NO_NUL,
        max_length=OVERRIDE_MAX_LENGTH,
        description="needed when the guard refuses (see the deploy-check operation): why deploy anyway",
    )


class RollbackIn(ClientInput):
    comment: str = Field("", pattern=NO_NUL, max_length=DEPLOY_COMMENT_MAX_LENGTH)


# ----- review ----------------------------------------------------------------------------------
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


class RefinementPage(PageMeta):
    items: list[RefinementOut]


class RefinementDecisionIn(ClientInput):
    decision: Literal["approve", "reject"]
    comment: str = Field("", pattern=NO_NUL, max_length=REVIEW_COMMENT_MAX_LENGTH)


# ----- audit and identity ----------------------------------------------------------------------
class AuditEntryOut(Schema):
    id: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target_id: str
    target: str
    before: dict[str, Any]
    after: dict[str, Any]
    comment: str


class AuditPage(PageMeta):
    items: list[AuditEntryOut]


class MeOut(Schema):
    username: str
    roles: list[str]
    token: str = Field(description="the visible prefix of the token in use")
    token_expires_at: datetime | None
