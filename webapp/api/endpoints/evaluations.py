"""Evaluations over HTTP: evaluate a succeeded run's last checkpoint against the baseline agents
(the run page's Evaluate button, through the same service) and read an evaluation with its table."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Router, Status

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import responses
from webapp.api.schemas.evaluations import EvaluationIn, EvaluationOut
from webapp.training.models import Evaluation
from webapp.training.selectors import evaluations as evaluation_selectors
from webapp.training.selectors import runs as run_selectors
from webapp.training.services.evaluations import evaluation_request

router = Router(tags=["training"])


def evaluation_dict(evaluation: Evaluation) -> dict[str, Any]:
    columns = [key for key, _ in evaluation_selectors.EVALUATION_COLUMNS]
    rows = [
        {
            "agent": row["agent"],
            "is_run": row["is_run"],
            "episodes": row["episodes"],
            **dict(zip(columns, row["values"], strict=True)),
        }
        for row in evaluation_selectors.evaluation_table(evaluation=evaluation)
    ]
    return {
        "id": evaluation.pk,
        "run": evaluation.run_id,
        "checkpoint_step": evaluation.checkpoint.step,
        "split": evaluation.split,
        "nb_episode": evaluation.nb_episode,
        "status": evaluation.status,
        "error": evaluation.error,
        "requested_by": evaluation.requested_by.get_username(),
        "created_at": evaluation.created_at,
        "started_at": evaluation.started_at,
        "finished_at": evaluation.finished_at,
        "rows": rows,
        "results": evaluation.results,
    }


def _evaluation_out(evaluation_id: int) -> dict[str, Any]:
    evaluation = evaluation_selectors.evaluation_get(pk=evaluation_id)
    if evaluation is None:
        raise Http404(f"no evaluation {evaluation_id}")
    return evaluation_dict(evaluation)


@router.post(
    "/runs/{run_id}/evaluations", response=responses(EvaluationOut, status=201), **gate(roles.EVALUATE_RUNS)
)
def run_evaluate(request: HttpRequest, run_id: int, payload: EvaluationIn) -> Status:
    """Queue an evaluation of the run's last checkpoint, its policy and the baselines on the same
    held-out episodes, as the run page's Evaluate button does (409 when the run has not
    succeeded or already has one in progress). Evaluations on test days are what the deploy guard
    reads."""
    run = run_selectors.run_get(pk=run_id)
    if run is None:
        raise Http404(f"no run {run_id}")
    evaluation = evaluation_request(
        run=run, user=request.user, split=payload.split, nb_episode=payload.nb_episode
    )
    return Status(201, _evaluation_out(evaluation.pk))


@router.get("/evaluations/{evaluation_id}", response=responses(EvaluationOut), **gate(roles.VIEW_EVALUATIONS))
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> dict[str, Any]:
    """An evaluation: its status, and once finished one row per agent, the run's policy first."""
    return _evaluation_out(evaluation_id)
