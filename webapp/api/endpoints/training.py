"""Training runs over HTTP: list (filtered as the runs list filters), launch (the launch form's
validation), cancel, resume, and the metrics the trainer reported."""

from __future__ import annotations

from typing import Any, Literal

from django import forms
from django.http import Http404, HttpRequest
from ninja import Query, Router, Status

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import limit_param, offset_param, page, responses
from webapp.api.errors import ApiError
from webapp.api.schemas.training import MetricsOut, RunLaunchIn, RunOut, RunPage
from webapp.jobs.models import JobStatus
from webapp.training.forms.launch import TrainConfigForm
from webapp.training.models import TrainingRun
from webapp.training.run_forms import TAG_RULE, tag_check
from webapp.training.selectors import metrics as metric_selectors
from webapp.training.selectors import run_filters
from webapp.training.selectors import runs as run_selectors
from webapp.training.selectors.run_labels import run_recipe_label
from webapp.training.services import runs as run_services
from webapp.validation import InputError, expert_spec

router = Router(tags=["training"])

RunStatusFilter = Literal[tuple(JobStatus.values)]  # type: ignore[valid-type]
MAX_METRIC_POINTS = 5_000


def run_dict(run: TrainingRun, best_policy: run_selectors.BestPolicy | None) -> dict[str, Any]:
    """A run as ``RunOut``; ``run`` comes from ``run_selectors.run_list`` (its best validation
    survival) with its tags prefetched."""
    recipe = run_recipe_label(run)
    return {
        "id": run.pk,
        "label": run.label,
        "env": run.env,
        "status": run.status,
        "total_steps": run.total_steps,
        "progress_step": run.progress_step,
        "attempt": run.attempt,
        "cancel_requested": run.cancel_requested,
        "launched_by": run.launched_by.get_username(),
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "error": run.error,
        "config": run.config,
        "best_validation_survival": run.best_validation_survival,
        "best_policy": best_policy,  # read by attribute: its is_starting_policy property too
        "tags": [tag.name for tag in run.tags.all()],
        "note": run.note,
        "recipe": {
            "name": recipe.recipe or None,
            "text": recipe.text,
            "changes": [
                {"setting": setting, "recipe_value": old, "run_value": new}
                for setting, old, new in recipe.changes
            ],
        },
    }


def _run(run_id: int) -> TrainingRun:
    run = run_selectors.run_list().prefetch_related("tags").filter(pk=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    return run


def _run_out(run_id: int) -> dict[str, Any]:
    """One run as ``RunOut``, read with its outcome (after a service wrote it, read again)."""
    run = _run(run_id)
    return run_dict(run, run_selectors.run_best_policy(run=run))


def _launch_form(payload: RunLaunchIn) -> TrainConfigForm:
    """The launch form filled with the defaults, overridden by the fields the client set."""
    form = TrainConfigForm()
    names = [name for name in form.fields if name != "label"]
    unknown = sorted(set(payload.config) - set(names))
    if unknown:
        raise ApiError(
            400,
            f"unknown config field {unknown[0]!r}",
            field=f"config.{unknown[0]}",
            accepted=", ".join(names),
        )
    expert = payload.config.get("pretrain_expert")
    if isinstance(expert, str):
        try:
            expert_spec(expert, "pretrain_expert")
        except InputError as error:
            raise ApiError(400, str(error), field="config.pretrain_expert") from None
    data = {name: form.fields[name].initial for name in names}
    data.update(payload.config)
    # unchecked boxes are absent from a form post: send False as absence
    data = {name: value for name, value in data.items() if value is not False and value is not None}
    return TrainConfigForm(data={**data, "label": payload.label})


@router.get("/runs", response=responses(RunPage), **gate(roles.VIEW_RUNS))
def run_list(
    request: HttpRequest,
    status: RunStatusFilter | None = None,
    tag: str = Query("", description=f"only the runs carrying this tag ({TAG_RULE}); empty: any"),
    limit: int = limit_param(),
    offset: int = offset_param(),
) -> dict[str, Any]:
    """Training runs, newest first; a well-formed tag no run carries gives an empty page, as on the
    runs list."""
    if tag:
        try:
            tag_check(tag)
        except forms.ValidationError as error:
            raise ApiError(400, " ".join(error.messages), field="tag") from None
    runs = page(
        run_filters.runs_filtered(status=status or "", tag=tag),
        limit=limit,
        offset=offset,
        to_dict=lambda run: run,
    )
    best_policies = run_selectors.runs_best_policies(runs=runs["items"])
    return {**runs, "items": [run_dict(run, best_policies.get(run.pk)) for run in runs["items"]]}


@router.post("/runs", response=responses(RunOut, status=201), **gate(roles.LAUNCH_RUNS))
def run_create(request: HttpRequest, payload: RunLaunchIn) -> Status:
    """Queue a run, validated exactly as the launch form validates it (400 names the field)."""
    form = _launch_form(payload)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        name = None if field == "__all__" else (field if field == "label" else f"config.{field}")
        raise ApiError(400, " ".join(errors), field=name)
    run = run_services.run_launch(
        config=form.cleaned_data["config"], launched_by=request.user, label=form.cleaned_data["label"]
    )
    return Status(201, _run_out(run.pk))


@router.get("/runs/{run_id}", response=responses(RunOut), **gate(roles.VIEW_RUNS))
def run_detail(request: HttpRequest, run_id: int) -> dict[str, Any]:
    return _run_out(run_id)


@router.post("/runs/{run_id}/cancel", response=responses(RunOut), **gate(roles.LAUNCH_RUNS))
def run_cancel(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Cancel a queued run at once, or ask a running one to checkpoint and stop (409 otherwise)."""
    run_services.run_cancel(run=_run(run_id), user=request.user)
    return _run_out(run_id)


@router.post("/runs/{run_id}/resume", response=responses(RunOut), **gate(roles.LAUNCH_RUNS))
def run_resume(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Queue a cancelled or failed run again from its last checkpoint (409 otherwise)."""
    run_services.run_resume(run=_run(run_id), user=request.user)
    return _run_out(run_id)


@router.get("/runs/{run_id}/metrics", response=responses(MetricsOut), **gate(roles.VIEW_RUNS))
def run_metrics(
    request: HttpRequest,
    run_id: int,
    after: int = Query(0, ge=0, le=2**62, description="only points with an id above this"),
    limit: int = Query(1000, ge=1, le=MAX_METRIC_POINTS, description="points per answer"),
) -> dict[str, Any]:
    """The namespaced metrics (losses/, charts/, llm/) the trainer reported, oldest first."""
    run = _run(run_id)
    points = metric_selectors.run_metric_points(run=run, after_id=after, limit=limit)
    items = [{"id": p.pk, "step": p.step, "values": p.values} for p in points]
    return {"run": run.pk, "items": items, "next_after": items[-1]["id"] if items else after}
