"""The operations router's live sessions: a session, a page of them, the console's snapshot (its
panels: alarms, decisions, timeline), and the bodies that start a session and set its speed,
with the start form's bounds."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput, PageMeta
from webapp.api.schemas.recommendations import RecommendationOut
from webapp.operations.forms import SessionStartForm
from webapp.operations.services import K_RANGE, SPEED_RANGE
from webapp.validation import DB_INT_MAX


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
    start_step: int = Field(
        0, ge=0, le=DB_INT_MAX, description="steps into the day where the session opens (0: its first step)"
    )
    max_steps: int = Field(0, ge=0, le=DB_INT_MAX, description="0: the whole scenario")


class SessionForkIn(ClientInput):
    """Where the new session opens: a recorded step of the source session (400 naming ``step`` and
    the steps accepted otherwise)."""

    step: int = Field(ge=0, le=DB_INT_MAX, description="a recorded step of the source session")
    label: str = Field("", pattern=NO_NUL, max_length=SESSION_LABEL_MAX_LENGTH)


class SessionSpeedIn(ClientInput):
    speed_seconds: float = Field(
        ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False, description="seconds per step"
    )
