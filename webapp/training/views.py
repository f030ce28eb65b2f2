"""Engineers' pages: launch form (from a named recipe), run detail (live charts), the
comparison of several runs, the POST actions cancel, resume and evaluate, the deploy confirmation
(the guard's evaluation, then deploy) and the rollback, and the mines of expert decisions (list,
detail with its progress, launch). Views call selectors to read and services to write."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from ace_core.errors import ConfigError
from ace_core.training.recipes import DEFAULT_RECIPE, quickest_recipe
from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.jobs.models import JobStatus
from webapp.training.forms.compare import RunCompareForm
from webapp.training.forms.deployments import DeployForm, RollbackForm
from webapp.training.forms.evaluations import EvaluationForm
from webapp.training.forms.launch import CUSTOM_RECIPE, TrainConfigForm, recipe_presets
from webapp.training.models import Checkpoint, TrainingRun
from webapp.training.run_forms import RunNotesForm
from webapp.training.selectors import mines as mine_selectors
from webapp.training.selectors.checkpoints import checkpoint_get, run_checkpoint_latest
from webapp.training.selectors.compare import (
    config_differences,
    evaluation_comparison,
    run_curves,
    runs_for_compare,
)
from webapp.training.selectors.deployments import deploy_check, deployment_current, deployment_get
from webapp.training.selectors.evaluations import EVALUATION_COLUMNS, evaluation_table, run_evaluations
from webapp.training.selectors.metrics import METRIC_LABELS, metric_names
from webapp.training.selectors.run_labels import run_recipe_label
from webapp.training.selectors.runs import run_best_policy, run_get, run_refinement_summary
from webapp.training.services.deployment import deployment_rollback, run_deploy
from webapp.training.services.evaluations import evaluation_request
from webapp.training.services.runs import run_cancel, run_launch, run_resume


def _run_or_404(pk: int) -> TrainingRun:
    run = run_get(pk=pk)
    if run is None:
        raise Http404(f"no run {pk}")
    return run


def _detail(run: TrainingRun) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("training:run_detail", args=[run.pk]))


def error_text(error: ValidationError | ConfigError) -> str:
    return " ".join(error.messages) if isinstance(error, ValidationError) else str(error)


class RunCompareView(PermissionGate, View):
    """Several runs: their learning curves overlaid and their evaluations side by side."""

    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest) -> HttpResponse:
        form = RunCompareForm(request.GET)
        if not form.is_valid():
            error = " ".join(form.errors["run"])
            return render(request, "training/run_compare.html", {"error": error}, status=400)
        runs, missing = runs_for_compare(pks=form.cleaned_data["run"])
        if missing:
            raise Http404(f"no run {', '.join(str(pk) for pk in missing)}; choose runs from the runs list")
        for run in runs:
            run.recipe = run_recipe_label(run)
        groups = evaluation_comparison(runs=runs)
        evaluated = {row["run"].pk for group in groups for row in group["runs"]}
        context = {
            "runs": runs,
            "config_differences": config_differences(runs=runs),
            "curves": [run_curves(run=run) for run in runs],
            "metric_labels": METRIC_LABELS,
            "metric_names": metric_names(),
            "groups": groups,
            "not_evaluated": [run for run in runs if run.pk not in evaluated],
        }
        return render(request, "training/run_compare.html", context)


def _launch_page(request: HttpRequest, form: TrainConfigForm, status: int = 200) -> HttpResponse:
    recipes = recipe_presets()
    chosen = recipes.get(form["recipe"].value() or "", {})
    context = {"form": form, "recipes": recipes, "recipe_description": chosen.get("description", "")}
    return render(request, "training/run_launch.html", context, status=status)


def _starting_recipe(env: str | None) -> str:
    return quickest_recipe(env) or CUSTOM_RECIPE if env else DEFAULT_RECIPE


class RunLaunchView(PermissionGate, View):
    permission_required = roles.LAUNCH_RUNS

    def get(self, request: HttpRequest) -> HttpResponse:
        """The form, filled from ``?recipe=NAME``; when absent, the quickest measured recipe of
        ``?env=GRID`` (of the default grid without one; no recipe for a grid none is measured on)."""
        try:
            recipe = (
                request.GET["recipe"] if "recipe" in request.GET else _starting_recipe(request.GET.get("env"))
            )
            form = TrainConfigForm(recipe=recipe)
            env = request.GET.get("env", "")
            if recipe == CUSTOM_RECIPE and env in {
                str(value) for value, _ in getattr(form.fields["env"], "choices", [])
            }:
                form.initial["env"] = env  # a grid no recipe is measured on: its own settings
        except ConfigError as error:
            messages.error(request, str(error))
            return _launch_page(request, TrainConfigForm(recipe=DEFAULT_RECIPE), status=400)
        if "mine" in request.GET:  # "train from this mine", on a mine's page
            mine = mine_selectors.mine_get(name=request.GET["mine"])
            if mine is None:
                messages.error(request, "no finished mine of that name; choose one on the mines page")
            else:
                form.initial.update(env=mine.env, pretrain_mine=mine.path)
        return _launch_page(request, form)

    def post(self, request: HttpRequest) -> HttpResponse:
        form = TrainConfigForm(request.POST)
        if form.is_valid():
            try:
                run = run_launch(
                    config=form.cleaned_data["config"],
                    launched_by=request.user,
                    label=form.cleaned_data["label"],
                    recipe=form.cleaned_data["recipe"],
                )
            except (ConfigError, ValidationError) as error:
                form.add_error(None, error_text(error))
            else:
                messages.success(request, f"run {run.pk} queued")
                return _detail(run)
        return _launch_page(request, form, status=400)


class RunDetailView(PermissionGate, View):
    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        context: dict[str, Any] = {
            "run": run,
            "recipe": run_recipe_label(run),
            "tags": [tag.name for tag in run.tags.all()],
            "notes_form": RunNotesForm(
                initial={"tags": ", ".join(tag.name for tag in run.tags.all()), "note": run.note}
            ),
            "config_items": sorted(run.config.items()),
            "checkpoint": run_checkpoint_latest(run=run),
            "best_policy": run_best_policy(run=run),
            "evaluations": [
                (evaluation, evaluation_table(evaluation=evaluation))
                for evaluation in run_evaluations(run=run)
            ],
            "evaluation_columns": [label for _, label in EVALUATION_COLUMNS],
            "refinements": run_refinement_summary(run=run),
            "deployment": deployment_current(),
            "evaluation_form": EvaluationForm(),
            "can_launch": request.user.has_perm(roles.LAUNCH_RUNS),
            "can_evaluate": request.user.has_perm(roles.EVALUATE_RUNS),
            "can_deploy": request.user.has_perm(roles.DEPLOY_CHECKPOINTS),
            "can_review": request.user.has_perm(roles.VIEW_REFINEMENTS),
            "metric_names": metric_names(),
        }
        return render(request, "training/run_detail.html", context)


class RunCancelView(PermissionGate, View):
    permission_required = roles.LAUNCH_RUNS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        try:
            run = run_cancel(run=run, user=request.user)
        except ValidationError as error:
            messages.error(request, error_text(error))
        else:
            stopping = run.status == JobStatus.RUNNING
            messages.success(
                request, f"run {run.pk} " + ("is stopping at its next step" if stopping else "cancelled")
            )
        return _detail(run)


class RunResumeView(PermissionGate, View):
    permission_required = roles.LAUNCH_RUNS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        try:
            run = run_resume(run=run, user=request.user)
        except ValidationError as error:
            messages.error(request, error_text(error))
        else:
            messages.success(request, f"run {run.pk} queued to resume from its last checkpoint")
        return _detail(run)


class RunEvaluateView(PermissionGate, View):
    permission_required = roles.EVALUATE_RUNS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        form = EvaluationForm(request.POST)
        if not form.is_valid():
            for field, errors in form.errors.items():
                messages.error(request, f"{field}: {' '.join(errors)}")
            return _detail(run)
        try:
            evaluation = evaluation_request(
                run=run,
                user=request.user,
                split=form.cleaned_data["split"],
                nb_episode=form.cleaned_data["nb_episode"],
            )
        except ValidationError as error:
            messages.error(request, error_text(error))
        else:
            messages.success(request, f"evaluation {evaluation.pk} queued")
        return _detail(run)


def _deploy_page(
    request: HttpRequest, checkpoint: Checkpoint, form: DeployForm, status: int = 200
) -> HttpResponse:
    """The deploy confirmation: the policy, the evaluation the guard reads and its verdict, what is
    deployed now, and the form (with the override's reason when the guard refuses)."""
    check = deploy_check(checkpoint=checkpoint)
    outcome = check.outcome
    context = {
        "run": checkpoint.run,
        "checkpoint": checkpoint,
        "check": check,
        "evaluation_rows": evaluation_table(evaluation=outcome.evaluation) if outcome else [],
        "evaluation_columns": [label for _, label in EVALUATION_COLUMNS],
        "best_policy": run_best_policy(run=checkpoint.run),
        "deployment": deployment_current(),
        "form": form,
    }
    return render(request, "training/deploy_confirm.html", context, status=status)


class CheckpointDeployView(PermissionGate, View):
    """GET: the confirmation, showing the evaluation the guard reads; POST: deploy through the
    guard (:func:`~webapp.training.services.deployment.run_deploy`). A refusal shows the page
    again with what is missing, the text typed kept."""

    permission_required = roles.DEPLOY_CHECKPOINTS

    @staticmethod
    def _checkpoint(run_pk: int, pk: int) -> Checkpoint:
        checkpoint = checkpoint_get(run_id=run_pk, pk=pk)
        if checkpoint is None:
            raise Http404(f"run {run_pk} has no checkpoint {pk}")
        return checkpoint

    def get(self, request: HttpRequest, run_pk: int, pk: int) -> HttpResponse:
        return _deploy_page(request, self._checkpoint(run_pk, pk), DeployForm())

    def post(self, request: HttpRequest, run_pk: int, pk: int) -> HttpResponse:
        checkpoint = self._checkpoint(run_pk, pk)
        form = DeployForm(request.POST)
        if form.is_valid():
            try:
                run_deploy(
                    run=checkpoint.run,
                    checkpoint=checkpoint,
                    user=request.user,
                    comment=form.cleaned_data["comment"],
                    override_reason=form.cleaned_data["override_reason"],
                )
            except ValidationError as error:
                form.add_error(None, error_text(error))
            else:
                messages.success(
                    request,
                    f"checkpoint at step {checkpoint.step} of run {run_pk} is now the deployed policy",
                )
                return _detail(checkpoint.run)
        return _deploy_page(request, checkpoint, form, status=400)


class DeploymentRollbackView(PermissionGate, View):
    """One click: the deployment before the current one is served again (audited)."""

    permission_required = roles.DEPLOY_CHECKPOINTS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        deployment = deployment_get(pk=pk)
        if deployment is None:
            raise Http404(f"no deployment {pk}")
        form = RollbackForm(request.POST)
        if not form.is_valid():
            messages.error(request, " ".join(form.errors.get("comment", ["invalid comment"])))
            return HttpResponseRedirect(reverse("training:run_list"))
        try:
            rollback = deployment_rollback(
                deployment=deployment, user=request.user, comment=form.cleaned_data["comment"]
            )
        except ValidationError as error:
            messages.error(request, error_text(error))
        else:
            restored = rollback.checkpoint
            messages.success(
                request,
                f"rolled back: run {restored.run_id} (checkpoint at step {restored.step}) is the deployed "
                f"policy again, in place of run {deployment.checkpoint.run_id}",
            )
        return HttpResponseRedirect(reverse("training:run_list"))
