"""The API's request and response bodies (pydantic, via django-ninja's Schema).

Response schemas mirror the JSON the pages already send (``webapp.live.session_messages``,
``webapp.live.run_messages``), so a console and an API client read the same fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from webapp.operations.forms import SessionStartForm
from webapp.operations.services import COMMENT_MAX_LENGTH as DECISION_COMMENT_MAX_LENGTH
from webapp.operations.services import K_RANGE, SPEED_RANGE
from webapp.review.models import COMMENT_MAX_LENGTH as REVIEW_COMMENT_MAX_LENGTH
from webapp.training.services.deployment import COMMENT_MAX_LENGTH as DEPLOY_COMMENT_MAX_LENGTH
from webapp.training.services.deployment import OVERRIDE_MAX_LENGTH
from webapp.training.services.evaluations import MAX_EPISODES, SPLITS
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
    move: dict[str, Any] | None = Field(
        None,
        description='the continuous move the card plays, e.g. {"redispatch": [[1, 3.0], [5, -3.0]]} '
        "(also in its action); null for topology alone",
    )
    cost: dict[str, float] | None = Field(
        None,
        description="what the move changes and costs while held: mw, redispatched_mw, curtailed_mw, "
        "storage_mw, euros_per_hour; null for topology alone (which costs nothing)",
    )
    status: str
    explanation_status: str
    explanation: str = Field(description="the language model's text: generated, not verified")
    explanation_model: str
    explanation_facts: str = Field("", description="the simulation's findings for the card, in sentences")
    explanation_flags: list[str] = Field(
        default_factory=list,
        description="figures the language model's text quotes that disagree with the simulation",
    )
    expired_because: str = Field("", description="why it expired (empty while open)")

    @staticmethod
    def resolve_move(card: dict[str, Any]) -> dict[str, Any] | None:
        return (card.get("figures") or {}).get("move")

    @staticmethod
    def resolve_cost(card: dict[str, Any]) -> dict[str, float] | None:
        return (card.get("figures") or {}).get("cost")


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
        '{"kind": "topology", "substation": 4, "set": [[2, 2]]}, {"kind": "index", "index": 17}, '
        'or a pair played together: {"kind": "pair", "actions": [{"kind": "index", "index": 3}, '
        '{"kind": "index", "index": 57}]}; any of them with a continuous move played in the same '
        'step: "move": {"redispatch": [[gen, MW], ...], "curtail": [[gen, MW cap], ...], '
        '"storage": [[unit, MW], ...]} (any of the three; + charges a storage unit), e.g. '
        '{"kind": "nothing", "move": {"redispatch": [[0, 5.0]]}}; a move past a limit (ramp, '
        "Pmin/Pmax, a generator that is not renewable for curtailment, a storage unit's power or "
        "energy) is refused with the limit named"
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
        "rejected_because when the action is worse than doing nothing (empty when refused); "
        "move and cost with a continuous move",
    )
    move: dict[str, Any] | None = Field(None, description="the action's continuous move, if any")
    cost: dict[str, float] | None = Field(
        None, description="as a recommendation's: what the move changes (MW) and costs (euros per hour)"
    )
    step: int
    stale: bool

    @staticmethod
    def resolve_move(outcome: dict[str, Any]) -> dict[str, Any] | None:
        return outcome["action"].get("move")

    @staticmethod
    def resolve_cost(outcome: dict[str, Any]) -> dict[str, float] | None:
        return (outcome.get("figures") or {}).get("cost")


SESSION_LABEL_MAX_LENGTH = SessionStartForm.base_fields["label"].max_length


class SessionStartIn(ClientInput):
    """The session start form's fields, with its bounds; the session service checks the day
    against the deployed policy's env (400 naming ``scenario_index`` and the days accepted)."""

    label: str = Field("", pattern=NO_NUL, max_length=SESSION_LABEL_MAX_LENGTH)
    scenario_index: int = Field(
        ge=0, le=DB_INT_MAX, description="the day: which episode of the deployed policy's env's chronics"
    )
    seed: int = Field(0, ge=0, le=DB_INT_MAX)
    k: int = Field(3, ge=K_RANGE[0], le=K_RANGE[1], description="recommendations per step (cards shown)")
    speed_seconds: float = Field(
        2.0, ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False, description="seconds per step"
    )
    max_steps: int = Field(0, ge=0, le=DB_INT_MAX, description="0: the whole scenario")


class SessionSpeedIn(ClientInput):
    speed_seconds: float = Field(
        ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False, description="seconds per step"
    )


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


class EvaluationIn(ClientInput):
    """The run page's Evaluate form."""

    split: Literal[tuple(SPLITS)] = Field(  # type: ignore[valid-type]
        "validation",
        description="validation to choose between runs; test for the final figure (the deploy guard reads it)",
    )
    nb_episode: int = Field(5, ge=1, le=MAX_EPISODES, description="held-out episodes per agent")


class EvaluationRowOut(Schema):
    agent: str = Field(description="the run's policy (plain, then checked by simulation) or a baseline")
    is_run: bool
    episodes: int
    survival_mean: float | None
    survival_std: float | None
    episodes_fully_survived: float | None
    reward_mean: float | None
    decision_ms_p50: float | None
    decision_ms_p95: float | None
    simulate_calls_per_step: float | None


class EvaluationOut(Schema):
    id: int
    run: int
    checkpoint_step: int = Field(description="the checkpoint evaluated (the run's last when requested)")
    split: str
    nb_episode: int
    status: str
    error: str
    requested_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    rows: list[EvaluationRowOut] = Field(
        description="one row per agent, as the run page's table (empty until it finishes)"
    )
    results: dict[str, Any] = Field(description="agent name -> the evaluation's result, with its episodes")


class MineSummaryOut(Schema):
    """A finished mine, as its files describe it."""

    name: str
    env: str
    expert: str
    split: str
    seeds: int
    episodes: int
    episode_length: int
    opponent: str
    demand_scale: float
    decisions: int
    topology_decisions: int
    distinct_topologies: int
    coverage: list[tuple[int, float]] = Field(
        description="(top N, share of the expert's topology decisions the N most played topologies cover)"
    )
    steps: int
    game_overs: int
    seconds: float


class MineLaunchOut(Schema):
    """A mine started from the web app (its row) and how far it is."""

    id: int
    name: str
    env: str
    status: str
    spec: dict[str, Any] = Field(description="its settings (a MineSpec)")
    done: int = Field(description="episodes on disk")
    total: int | None = Field(description="episodes it plays (null until its worker starts)")
    finished: bool
    error: str
    launched_by: str
    created_at: datetime


class MineListOut(Schema):
    finished: list[MineSummaryOut] = Field(description="finished mines on disk, by env then name")
    launches: list[MineLaunchOut] = Field(description="mines started here, newest first")


class MineTopActionOut(Schema):
    index: int
    count: int
    share: float = Field(description="share of the expert's topology decisions")
    description: str = Field(description="the action in words (empty when its env is not available here)")


class MineOut(Schema):
    name: str
    summary: MineSummaryOut | None = Field(description="the finished mine (null: not finished)")
    launch: MineLaunchOut | None = Field(description="its newest launch here (null: made elsewhere)")
    top_actions: list[MineTopActionOut] = Field(description="its most played topology actions")


class MineLaunchIn(ClientInput):
    """The mine form's fields; one left out (or null) keeps the form's default, which makes the
    mine a run's ``pretrain_mine=auto`` would make."""

    env: str = Field(pattern=NO_NUL, max_length=100, description="the grid whose train days are mined")
    expert: str | None = Field(
        None, pattern=NO_NUL, max_length=500, description="greedy, greedy:BUDGET or greedy:key=value,..."
    )
    seeds: int | None = Field(None, ge=0, le=DB_INT_MAX, description="grid seeds per day")
    episodes: int | None = Field(None, ge=0, le=DB_INT_MAX, description="the first N train days (null: all)")
    episode_length: int | None = Field(None, ge=0, le=DB_INT_MAX, description="steps per day")
    opponent: str | None = Field(None, pattern=NO_NUL, max_length=100, description="env, none or random-line")
    demand_scale: float | None = Field(
        None, allow_inf_nan=False, description="every load and production of the days times this"
    )


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
