"""Training runs: the grids a run can be launched on, the runs list and one run, each run's best
outcome on validation days (its finished validation evaluations and the trainer's validations
during training), the policy its validations kept as ``best.pt``, and the count of its
refinements by status."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import FloatField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Greatest

from ace_core.training.best_choice import SURVIVAL_UNDER_ATTACKS, SURVIVAL_UNEVEN, BestChoice
from webapp.jobs.models import JobStatus
from webapp.training.models import Evaluation, MetricPoint, TrainingRun
from webapp.training.selectors.evaluations import RUN_AGENT
from webapp.training.selectors.metrics import VALIDATION_DECISIONS_METRIC, VALIDATION_SURVIVAL_METRIC


def env_names() -> tuple[str, ...]:
    from ace_core.grid.envs import available_env_names  # imports grid2op: only when needed

    return available_env_names()


def _best_float(rows: QuerySet, value: Any) -> Subquery:
    """The highest ``value`` (a JSON number, cast to float) over ``rows``, as a subquery."""
    best = rows.annotate(best=Cast(value, FloatField())).filter(best__isnull=False).order_by("-best")
    return Subquery(best.values("best")[:1], output_field=FloatField())


def with_outcomes(runs: QuerySet[TrainingRun]) -> QuerySet[TrainingRun]:
    """Each run with ``best_validation_survival``: the highest mean survival of its policy on
    validation days, over its finished validation evaluations and the validations the trainer
    ran during training (the ``eval/validation_survival`` metric); None when it has neither."""
    evaluations = _best_float(
        Evaluation.objects.filter(run=OuterRef("pk"), split="validation", status=JobStatus.SUCCEEDED),
        KeyTextTransform("survival_mean", KeyTransform(RUN_AGENT, "results")),
    )
    in_training = _best_float(
        MetricPoint.objects.filter(run=OuterRef("pk")), KeyTextTransform(VALIDATION_SURVIVAL_METRIC, "values")
    )
    # GREATEST is NULL on SQLite as soon as one side is: each side falls back on the other
    best = Greatest(Coalesce(evaluations, in_training), Coalesce(in_training, evaluations))
    return runs.annotate(best_validation_survival=best)


def run_list(*, status: str = "") -> QuerySet[TrainingRun]:
    runs = with_outcomes(TrainingRun.objects.select_related("launched_by"))
    if status:
        runs = runs.filter(status=status)
    return runs.order_by("-created_at", "-id")


def run_get(*, pk: int) -> TrainingRun | None:
    return TrainingRun.objects.select_related("launched_by").filter(pk=pk).first()


@dataclass(frozen=True)
class BestPolicy:
    """The policy a run keeps as ``best.pt``, as its in-training validations saw it."""

    survival: float
    step: int
    decisions: int | None
    """the run's decisions when it was validated (None: a run older than that metric)"""
    validations: int
    """how many validations the run has reported"""
    choice: BestChoice = BestChoice()
    """the rule the run chose by (its validation_decides and validation_floor)"""
    survival_under_attacks: float | None = None
    """its survival on the attacked copy of the days (None: not played)"""
    survival_uneven: float | None = None
    """its survival on the uneven copies of the days (None: not played)"""

    @property
    def chosen_on(self) -> str:
        """the survival that chose it: mean (every copy), attacks or uneven"""
        return self.choice.decides

    @property
    def floor(self) -> float:
        """the share of the days as they are a policy had to hold to be preferred (0: none)"""
        return self.choice.floor

    @property
    def is_starting_policy(self) -> bool:
        """best.pt is the policy the run started from (its clone, or its fresh networks): no
        validation after the first beat it, so training improved nothing the validation days see."""
        return self.validations > 1 and self.decisions == 0


def _best_of(points: list[tuple[int, dict[str, Any]]], choice: BestChoice) -> BestPolicy:
    """The validation whose policy the run kept as best.pt, of (step, metric values) in the order
    they were reported, by the run's own choice."""
    index = 0
    for later, (_, values) in enumerate(points[1:], start=1):
        if choice.prefers(values, points[index][1]):
            index = later
    step, values = points[index]
    decisions = values.get(VALIDATION_DECISIONS_METRIC)
    if not isinstance(decisions, (int, float)):
        decisions = 0 if index == 0 else None
    return BestPolicy(
        survival=float(values[VALIDATION_SURVIVAL_METRIC]),
        step=step,
        decisions=int(decisions) if decisions is not None else None,
        validations=len(points),
        choice=choice,
        survival_under_attacks=values.get(SURVIVAL_UNDER_ATTACKS),
        survival_uneven=values.get(SURVIVAL_UNEVEN),
    )


def runs_best_policies(*, runs: Iterable[TrainingRun]) -> dict[int, BestPolicy]:
    """The validation of each run whose policy it kept as best.pt, by run id, in one query; a run
    that has not validated is absent. The run's own choice decides (its ``validation_decides`` and
    ``validation_floor``; ties keep the earlier), the rule the trainer kept best.pt by. A run
    older than the decisions metric counts its first validation as decision 0 (the trainer
    validates before its first decision)."""
    points: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    rows = MetricPoint.objects.filter(
        run__in=[run.pk for run in runs], values__has_key=VALIDATION_SURVIVAL_METRIC
    )
    for run_id, step, values in rows.order_by("run_id", "step", "id").values_list("run_id", "step", "values"):
        if isinstance(values.get(VALIDATION_SURVIVAL_METRIC), (int, float)):
            points[run_id].append((step, values))
    choices = {run.pk: BestChoice.of_config(run.config) for run in runs}
    return {run_id: _best_of(run_points, choices[run_id]) for run_id, run_points in points.items()}


def run_best_policy(*, run: TrainingRun) -> BestPolicy | None:
    """The validation of one run whose policy it kept as best.pt (``runs_best_policies``); None
    when it has not validated."""
    return runs_best_policies(runs=[run]).get(run.pk)


def run_refinement_summary(*, run: TrainingRun) -> dict[str, int]:
    from django.db.models import Count, Q

    from webapp.review.models import RefinementStatus

    return run.refinements.aggregate(
        total=Count("id"),
        accepted=Count("id", filter=Q(accepted_by_simulation=True)),
        pending=Count("id", filter=Q(status=RefinementStatus.PENDING)),
        approved=Count("id", filter=Q(status=RefinementStatus.APPROVED)),
        rejected=Count("id", filter=Q(status=RefinementStatus.REJECTED)),
    )
