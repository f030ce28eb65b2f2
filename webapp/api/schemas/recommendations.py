"""The operations router's decisions on the current step: the recommendation cards with their
simulated evidence, an operator's accept or reject of one, and the what-if simulation of any
action (with a continuous move) and its outcome."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput
from webapp.operations.services import COMMENT_MAX_LENGTH as DECISION_COMMENT_MAX_LENGTH
from webapp.validation import DB_INT_MAX


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
        "(status, worst outage and line, lines at risk), look-ahead (max rho per step, "
        "first overload, the forecast used) and now: the action played on the grid as it is "
        "now rather than on the next step's forecast (max_rho_after, game_over, overloads_after; "
        "null when not checked)",
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
        description="as a recommendation's: outcome in words, N-1, look-ahead and now, and "
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
