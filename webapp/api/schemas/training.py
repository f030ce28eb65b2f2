"""The training router's runs: a run with its best outcome on validation days and the policy its
validations kept, its tags, note and recipe, a page of runs, the body that launches one, and a
run's metric points."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput, PageMeta
from webapp.training.services.runs import LABEL_MAX_LENGTH


class BestPolicyOut(Schema):
    survival: float = Field(description="its mean survival on the validation days")
    step: int = Field(description="the environment step the trainer validated it at")
    decisions: int | None = Field(description="the run's decisions then (null: a run older than that metric)")
    validations: int = Field(description="how many validations the run has reported")
    survival_under_attacks: float | None = Field(
        description="its survival on the attacked copy of the validation days (null: not played)"
    )
    survival_uneven: float | None = Field(
        description="its survival on the uneven copies of the validation days (null: not played)"
    )
    chosen_on: str = Field(
        description="the survival that chose it (the run's validation_decides): mean, over every copy "
        "of the days played, attacks, the attacked copy's, or uneven, the uneven copies'"
    )
    floor: float = Field(
        description="the run's validation_floor: a policy holding at least this share of the days as "
        "they are was preferred to any that did not (0: none)"
    )
    is_starting_policy: bool = Field(
        description="no later validation beat the first: best.pt is the policy the run started from "
        "(its clone or fresh networks), and deploying the run deploys that policy"
    )


class RecipeChangeOut(Schema):
    setting: str
    recipe_value: str = Field(description="the recipe's value, in words")
    run_value: str = Field(description="the run's value, in words")


class RunRecipeOut(Schema):
    name: str | None = Field(
        description="the recipe the run was launched from (recorded by the launch form), else the recipe "
        "whose settings its config equals (null: none, a custom run)"
    )
    text: str = Field(description='as the runs list shows it: "custom", "ace-14bus-offline, edited: steps"')
    changes: list[RecipeChangeOut] = Field(description="the settings changed from the recipe at launch")


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
    tags: list[str] = Field(description="the engineers' tags on the run, in alphabetical order")
    note: str = Field(description="the engineers' note on the run")
    recipe: RunRecipeOut


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
