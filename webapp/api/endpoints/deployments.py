"""Deploying a run's policy over HTTP, with the pages' guard: what the guard finds for a run, the
deploy (refused with 409 naming what is missing, unless an override gives a written reason), the
one-step rollback, and the deployments made so far."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Router, Status

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import limit_param, offset_param, page, responses
from webapp.api.errors import ApiError
from webapp.api.schemas.deployments import DeployCheckOut, DeployIn, DeploymentOut, DeploymentPage, RollbackIn
from webapp.training.errors import DeployGuardError
from webapp.training.models import Deployment, TrainingRun
from webapp.training.selectors import checkpoints as checkpoint_selectors
from webapp.training.selectors import deployments as deployment_selectors
from webapp.training.selectors import runs as run_selectors
from webapp.training.services import deployment as deployment_services

router = Router(tags=["deployment"])


def deployment_dict(deployment: Deployment, current_id: int | None) -> dict[str, Any]:
    return {
        "id": deployment.pk,
        "run": deployment.checkpoint.run_id,
        "checkpoint_step": deployment.checkpoint.step,
        "deployed_by": deployment.deployed_by.get_username(),
        "deployed_at": deployment.deployed_at,
        "comment": deployment.comment,
        "evaluation": deployment.evaluation_id,
        "override_reason": deployment.override_reason,
        "rollback_of": deployment.rollback_of_id,
        "previous": deployment.previous_id,
        "current": deployment.pk == current_id,
    }


def _current_id() -> int | None:
    current = deployment_selectors.deployment_current()
    return current.pk if current is not None else None


def _run(run_id: int) -> TrainingRun:
    run = run_selectors.run_get(pk=run_id)
    if run is None:
        raise Http404(f"no run {run_id}")
    return run


@router.get("/deployments", response=responses(DeploymentPage), **gate(roles.VIEW_DEPLOYMENT))
def deployment_list(request: HttpRequest, limit: int = limit_param(), offset: int = offset_param()) -> dict:
    """Deploys and rollbacks, newest first; the first is the policy live sessions use."""
    current_id = _current_id()
    return page(
        deployment_selectors.deployment_list(),
        limit=limit,
        offset=offset,
        to_dict=lambda deployment: deployment_dict(deployment, current_id),
    )


@router.get("/runs/{run_id}/deploy-check", response=responses(DeployCheckOut), **gate(roles.VIEW_RUNS))
def run_deploy_check(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """What the deploy guard finds for the run's last checkpoint: the evaluation on test days it
    reads, and what is missing for a deploy without an override (409 when it has no checkpoint)."""
    run = _run(run_id)
    checkpoint = checkpoint_selectors.run_checkpoint_latest(run=run)
    if checkpoint is None:
        raise ApiError(409, f"run {run.pk} has no checkpoint to deploy")
    check = deployment_selectors.deploy_check(checkpoint=checkpoint)
    outcome = check.outcome
    return {
        "run": run.pk,
        "checkpoint_step": checkpoint.step,
        "passed": check.passed,
        "refusal": check.refusal,
        "outcome": None
        if outcome is None
        else {
            "evaluation": outcome.evaluation.pk,
            "episodes": outcome.episodes,
            "policy": outcome.agent,
            "survival": outcome.survival,
            "do_nothing_survival": outcome.do_nothing,
            "simulations_per_step": outcome.simulations_per_step,
            "at_least_do_nothing": outcome.at_least_do_nothing,
        },
    }


@router.post(
    "/runs/{run_id}/deploy", response=responses(DeploymentOut, status=201), **gate(roles.DEPLOY_CHECKPOINTS)
)
def run_deploy(request: HttpRequest, run_id: int, payload: DeployIn) -> Status:
    """Deploy the run's policy (its last checkpoint) as the pages do: it needs a finished
    evaluation on test days in which the checked policy survives at least as long as do-nothing,
    or an ``override_reason``; a refusal (409) names what is missing and writes nothing."""
    try:
        deployment = deployment_services.run_deploy(
            run=_run(run_id),
            user=request.user,
            comment=payload.comment,
            override_reason=payload.override_reason,
        )
    except DeployGuardError as error:
        raise ApiError(409, " ".join(error.messages), field="override_reason") from None
    deployment = deployment_selectors.deployment_get(pk=deployment.pk)
    return Status(201, deployment_dict(deployment, deployment.pk))


@router.post(
    "/deployments/{deployment_id}/rollback",
    response=responses(DeploymentOut, status=201),
    **gate(roles.DEPLOY_CHECKPOINTS),
)
def deployment_rollback(request: HttpRequest, deployment_id: int, payload: RollbackIn) -> Status:
    """Serve the deployment before this one again; this one must be current (409 otherwise, or
    when there is none before it)."""
    deployment = deployment_selectors.deployment_get(pk=deployment_id)
    if deployment is None:
        raise Http404(f"no deployment {deployment_id}")
    rollback = deployment_services.deployment_rollback(
        deployment=deployment, user=request.user, comment=payload.comment
    )
    rollback = deployment_selectors.deployment_get(pk=rollback.pk)
    return Status(201, deployment_dict(rollback, rollback.pk))
