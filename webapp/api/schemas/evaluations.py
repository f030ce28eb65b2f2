"""The evaluations router: the body that asks for an evaluation of a run against the baselines,
and an evaluation with its results, one row per agent as on the run page."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from webapp.api.schemas.common import ClientInput
from webapp.training.services.evaluations import MAX_EPISODES, SPLITS


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
