"""The deployments router: the deploy guard's finding for a run (its policy on test days beside
do-nothing), a deployment and a page of them, and the bodies that deploy (with an override's
reason when the guard refuses) and roll back."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema

from webapp.api.schemas.common import NO_NUL, ClientInput, PageMeta
from webapp.training.services.deployment import COMMENT_MAX_LENGTH as DEPLOY_COMMENT_MAX_LENGTH
from webapp.training.services.deployment import OVERRIDE_MAX_LENGTH


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
