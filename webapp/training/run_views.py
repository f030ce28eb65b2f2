"""Engineers' pages around the runs list: the list itself (filtered and sorted from query
parameters), a run's tags and note, and a run's metrics and episodes as CSV. Views call
selectors to read and services to write."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.jobs.models import JobStatus
from webapp.training.models import TrainingRun
from webapp.training.run_forms import RunListForm, RunNotesForm
from webapp.training.selectors import run_exports
from webapp.training.selectors import run_filters as list_selectors
from webapp.training.selectors.compare import COMPARE_MAX_RUNS
from webapp.training.selectors.deployments import deployment_current, runs_test_outcomes
from webapp.training.selectors.run_labels import run_recipe_label
from webapp.training.selectors.runs import run_get, runs_best_policies
from webapp.training.services.notes import run_notes_set

PAGE_SIZE = 50


def _run_or_404(pk: int) -> TrainingRun:
    run = run_get(pk=pk)
    if run is None:
        raise Http404(f"no run {pk}")
    return run


class RunListView(PermissionGate, View):
    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest) -> HttpResponse:
        envs, recipes = list_selectors.run_envs(), list_selectors.recipe_choices()
        filters, errors = RunListForm(request.GET, envs=envs, recipes=recipes).filters()
        for error in errors:
            messages.error(request, error)
        runs = list_selectors.runs_filtered(**filters)
        page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
        best_policies = runs_best_policies(runs=page)
        test_outcomes = runs_test_outcomes(runs=page)
        deployment = deployment_current()
        for run in page:
            run.recipe = run_recipe_label(run)
            run.best_policy = best_policies.get(run.pk)
            run.test_outcome = test_outcomes.get(run.pk)
            run.is_deployed = deployment is not None and deployment.checkpoint.run_id == run.pk
        context = {
            "page": page,
            "filters": filters,
            "filtered": any(value for name, value in filters.items() if name != "sort"),
            "statuses": JobStatus.values,
            "envs": envs,
            "recipes": recipes,
            "tags": list_selectors.run_tags(),
            "sorts": list_selectors.SORTS,
            "compare_max_runs": COMPARE_MAX_RUNS,
            "deployment": deployment,
            "can_deploy": request.user.has_perm(roles.DEPLOY_CHECKPOINTS),
        }
        return render(request, "training/run_list.html", context)


class RunNotesView(PermissionGate, View):
    """POST: replace a run's tags and note (engineers), then back to the run's page."""

    permission_required = roles.LAUNCH_RUNS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        form = RunNotesForm(request.POST)
        if form.is_valid():
            run_notes_set(run=run, user=request.user, **form.cleaned_data)
            messages.success(request, f"tags and note of run {run.pk} saved")
        else:
            for field, errors in form.errors.items():
                messages.error(request, f"{field}: {' '.join(errors)}; nothing was saved")
        return HttpResponseRedirect(reverse("training:run_detail", args=[run.pk]) + "#notes")


class _Echo:
    """A file whose write returns the line, for csv.writer to build streamed rows."""

    def write(self, value: str) -> str:
        return value


def _csv_response(rows: Iterable[list[Any]], filename: str) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())
    lines: Iterator[str] = (writer.writerow(row) for row in rows)
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _keys_asked(request: HttpRequest) -> list[str]:
    """``?keys=a,b`` or ``?keys=a&keys=b``, each key once, in the order given."""
    asked = [key.strip() for value in request.GET.getlist("keys") for key in value.split(",")]
    return list(dict.fromkeys(key for key in asked if key))


class RunMetricsCsvView(PermissionGate, View):
    """A run's metrics as CSV: ``?keys=`` picks the metrics (names as the trainer reports them,
    e.g. ``losses/qf1_loss``; all of the run's when absent); an unknown key is refused (400)."""

    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        known = run_exports.run_metric_keys(run=run)
        keys = _keys_asked(request) or known
        unknown = [key for key in keys if key not in known]
        if unknown:
            return HttpResponse(
                f"run {run.pk} has no metric {', '.join(unknown)}; accepted: {', '.join(known) or 'none yet'} "
                "(keys=NAME,NAME or keys repeated; all of them when keys is absent)\n",
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        return _csv_response(run_exports.run_metric_rows(run=run, keys=keys), f"run-{run.pk}-metrics.csv")


class RunEpisodesCsvView(PermissionGate, View):
    """A run's training episodes as CSV (what the reward and survival charts show)."""

    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        run = _run_or_404(pk)
        return _csv_response(run_exports.run_episode_rows(run=run), f"run-{run.pk}-episodes.csv")
