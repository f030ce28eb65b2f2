"""The mines router: a finished mine of expert decisions as its files describe it, a mine started
from the web app and how far it is, the list of both, one mine with its most played topology
actions, and the body that launches one (the mine form's fields)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput
from webapp.validation import DB_INT_MAX


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
    opponent: str | None = Field(
        None,
        pattern=NO_NUL,
        max_length=100,
        description="env, none, random-line or storm, settings after a colon (storm:cooldown=36)",
    )
    demand_scale: float | None = Field(
        None, allow_inf_nan=False, description="every load and production of the days times this"
    )
