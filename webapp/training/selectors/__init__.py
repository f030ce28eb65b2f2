"""Reads for training runs: lists, details, the live snapshot a run page starts from, and the
rows newer than a cursor (the database relay used when there is no Redis)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import FloatField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Greatest

from webapp.jobs.models import JobStatus
from webapp.live import run_messages
from webapp.training.models import (
    Checkpoint,
    Deployment,
    EpisodeRecord,
    Evaluation,
    FinetuneRecord,
    MetricPoint,
    TrainingRun,
)

SNAPSHOT_LIMIT = 5_000
"""rows of each kind a page receives on connect (the most recent ones)"""


def env_names() -> tuple[str, ...]:
    from ace_core.grid.envs import available_env_names  # imports grid2op: only when needed

    return available_env_names()


RUN_AGENT = "ace"
"""the name a run's own policy has in an evaluation's results (the others are baselines)"""
RUN_CHECKED_AGENT = "ace-checked"
"""the run's policy as deployed: its most likely actions checked by simulation"""
RUN_LABELS = {RUN_AGENT: "this run", RUN_CHECKED_AGENT: "this run, checked by simulation"}


VALIDATION_SURVIVAL_METRIC = "eval/validation_survival"
"""the trainer's in-training validation: the policy's mean survival on the validation days"""
VALIDATION_DECISIONS_METRIC = "eval/validation_decisions"
"""the run's decision count when the trainer validated (absent from runs older than it)"""
METRIC_LABELS = {
    # training progress
    "charts/episodic_return": "episode reward (sum over the episode)",
    "charts/episodic_length": "episode length (steps survived)",
    "charts/survival": "episode survival (fraction of the episode)",
    "charts/SPS": "training speed (steps per second)",
    "charts/buffer_size": "replay buffer (transitions)",
    "charts/decisions": "decisions taken (count)",
    "charts/episodes": "episodes played (count)",
    "charts/updates": "gradient updates (count)",
    # validation during training
    VALIDATION_SURVIVAL_METRIC: "validation survival (policy on the validation days, during training)",
    "eval/validation_reward": "validation reward (policy on the validation days, during training)",
    VALIDATION_DECISIONS_METRIC: "decisions taken when validated (during training)",
    # losses and the temperature
    "losses/qf1_loss": "critic loss, first Q network",
    "losses/qf2_loss": "critic loss, second Q network",
    "losses/actor_loss": "policy loss",
    "losses/alpha": "entropy temperature (alpha)",
    "losses/alpha_loss": "temperature loss",
    "losses/entropy": "policy entropy (nats)",
    "losses/q_target_mean": "mean Q target",
    "losses/anchor": "expert anchor loss",
    "losses/conservative": "conservative Q penalty",
    "losses/imitation": "imitation loss",
    # the LLM: counts since the run started, rates, times
    "llm/calls": "LLM calls (count)",
    "llm/critic_calls": "LLM calls by the critic (count)",
    "llm/critic_refused": "critic answers refused (count)",
    "llm/refinements": "refinements (count)",
    "llm/accepted": "refinements accepted by simulation (count)",
    "llm/approved": "refinements approved by reviewers (count)",
    "llm/rejected": "refinements rejected by reviewers (count)",
    "llm/awaiting_approval": "refinements awaiting a reviewer (count)",
    "llm/shapings": "reward shapings (count)",
    "llm/finetunes": "LoRA fine-tunes (count)",
    "llm/buffer_size": "LLM buffer (transitions)",
    "llm/acceptance_rate": "refinement acceptance rate (fraction accepted by simulation)",
    "llm/call_seconds": "time per LLM call (seconds)",
    "llm/refine_seconds": "time per refinement (seconds)",
    "llm/critic_seconds": "time per critic pass (seconds)",
    # the imitation start
    "pretrain/mining": "mining done (fraction)",
    "pretrain/cloning": "cloning done (fraction)",
    "pretrain/mined_decisions": "mined expert decisions (count)",
    "pretrain/loss_last_epoch": "cloning loss, last epoch",
    "pretrain/agreement_before": "agreement with the expert before cloning (fraction)",
    "pretrain/agreement_after": "agreement with the expert after cloning (fraction)",
}
"""readable names, with their units, of the metrics the run's charts and the comparison page show
(others keep their metrics.jsonl name)"""
METRIC_GROUPS = {
    "charts": "training progress",
    "eval": "validation",
    "losses": "losses",
    "llm": "LLM",
    "pretrain": "imitation start",
}
"""the heading of each metric namespace in the comparison page's menu"""


def metric_names() -> dict[str, dict[str, str]]:
    """What the charts' scripts read (json_script): ``labels`` by metric, ``groups`` by namespace."""
    return {"labels": METRIC_LABELS, "groups": METRIC_GROUPS}


def _best_float(rows: QuerySet, value: Any) -> Subquery:
    """The highest ``value`` (a JSON number, cast to float) over ``rows``, as a subquery."""
    best = rows.annotate(best=Cast(value, FloatField())).filter(best__isnull=False).order_by("-best")
    return Subquery(best.values("best")[:1], output_field=FloatField())


def _with_outcomes(runs: QuerySet[TrainingRun]) -> QuerySet[TrainingRun]:
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
    runs = _with_outcomes(TrainingRun.objects.select_related("launched_by"))
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

    @property
    def is_starting_policy(self) -> bool:
        """best.pt is the policy the run started from (its clone, or its fresh networks): no
        validation after the first beat it, so training improved nothing the validation days see."""
        return self.validations > 1 and self.decisions == 0


def _best_of(points: list[tuple[int, dict[str, Any]]]) -> BestPolicy:
    """The best of one run's validations, (step, metric values) in the order they were reported."""
    survivals = [values[VALIDATION_SURVIVAL_METRIC] for _, values in points]
    index = survivals.index(max(survivals))  # the earlier on a tie
    step, values = points[index]
    decisions = values.get(VALIDATION_DECISIONS_METRIC)
    if not isinstance(decisions, (int, float)):
        decisions = 0 if index == 0 else None
    return BestPolicy(
        survival=float(values[VALIDATION_SURVIVAL_METRIC]),
        step=step,
        decisions=int(decisions) if decisions is not None else None,
        validations=len(points),
    )


def runs_best_policies(*, runs: Iterable[TrainingRun]) -> dict[int, BestPolicy]:
    """The best of each run's in-training validations, by run id, in one query; a run that has not
    validated is absent. On a tie the earlier validation wins, as the trainer keeps best.pt. A run
    older than the decisions metric counts its first validation as decision 0 (the trainer
    validates before its first decision)."""
    points: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    rows = MetricPoint.objects.filter(
        run__in=[run.pk for run in runs], values__has_key=VALIDATION_SURVIVAL_METRIC
    )
    for run_id, step, values in rows.order_by("run_id", "step", "id").values_list("run_id", "step", "values"):
        if isinstance(values.get(VALIDATION_SURVIVAL_METRIC), (int, float)):
            points[run_id].append((step, values))
    return {run_id: _best_of(run_points) for run_id, run_points in points.items()}


def run_best_policy(*, run: TrainingRun) -> BestPolicy | None:
    """The best of one run's in-training validations (``runs_best_policies``); None when it has
    not validated."""
    return runs_best_policies(runs=[run]).get(run.pk)


def run_checkpoint_latest(*, run: TrainingRun) -> Checkpoint | None:
    return run.checkpoints.order_by("-id").first()


def run_evaluations(*, run: TrainingRun) -> QuerySet[Evaluation]:
    return run.evaluations.select_related("checkpoint", "requested_by").order_by("-created_at", "-id")


def evaluation_get(*, pk: int) -> Evaluation | None:
    return Evaluation.objects.select_related("checkpoint", "requested_by").filter(pk=pk).first()


EVALUATION_COLUMNS = (
    ("survival_mean", "mean survival"),
    ("survival_std", "std"),
    ("episodes_fully_survived", "fully survived"),
    ("reward_mean", "mean reward"),
    ("decision_ms_p50", "decision ms p50"),
    ("decision_ms_p95", "decision ms p95"),
    ("simulate_calls_per_step", "simulations per step"),
)


def evaluation_table(*, evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per agent (the run's policy first, plain then checked by simulation, then the
    baselines, best survival first), with the columns of :data:`EVALUATION_COLUMNS`."""
    rows = []
    for agent, result in evaluation.results.items():
        result = result if isinstance(result, dict) else {}
        rows.append(
            {
                "agent": RUN_LABELS.get(agent, agent),
                "is_run": agent in RUN_LABELS,
                "order": list(RUN_LABELS).index(agent) if agent in RUN_LABELS else len(RUN_LABELS),
                "values": [result.get(key) for key, _ in EVALUATION_COLUMNS],
                "episodes": len(result.get("episodes", [])),
            }
        )
    rows.sort(key=lambda row: (row["order"], -(row["values"][0] or 0.0)))
    return rows


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


def deployment_current() -> Deployment | None:
    return (
        Deployment.objects.select_related(
            "checkpoint__run", "deployed_by", "previous__checkpoint__run", "evaluation"
        )
        .order_by("-deployed_at", "-id")
        .first()
    )


def deployment_list() -> QuerySet[Deployment]:
    """Every deployment decision (deploys and rollbacks), newest first: the first is current."""
    return Deployment.objects.select_related("checkpoint", "deployed_by").order_by("-deployed_at", "-id")


def deployment_get(*, pk: int) -> Deployment | None:
    return (
        Deployment.objects.select_related("checkpoint__run", "deployed_by", "previous__checkpoint__run")
        .filter(pk=pk)
        .first()
    )


# --- outcomes on test days, and the deploy guard that reads them ---

DO_NOTHING = "do-nothing"
"""the baseline a policy must at least match on test days to be deployed without an override"""
DEPLOY_SPLIT = "test"
"""the days the deploy guard reads an evaluation on"""


@dataclass(frozen=True)
class OutcomeOnTestDays:
    """A run's policy on test days, as one finished evaluation played it, beside do-nothing.

    ``agent`` is the policy as deployed (checked by simulation) when the evaluation played it, else
    the plain policy (an evaluation made with ``GRIDACE_CHECKED_AGENT`` empty)."""

    evaluation: Evaluation
    agent: str
    survival: float | None
    do_nothing: float | None
    simulations_per_step: float | None
    episodes: int

    @property
    def agent_label(self) -> str:
        return RUN_LABELS[self.agent]

    @property
    def at_least_do_nothing(self) -> bool:
        """The policy survives, on average, at least as long as do-nothing on these days."""
        return self.survival is not None and self.do_nothing is not None and self.survival >= self.do_nothing


def _number(result: Any, key: str) -> float | None:
    value = result.get(key) if isinstance(result, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def outcome_on_test_days(*, evaluation: Evaluation) -> OutcomeOnTestDays:
    """The run's policy (checked by simulation when played so) against do-nothing in ``evaluation``."""
    results = evaluation.results if isinstance(evaluation.results, dict) else {}
    agent = RUN_CHECKED_AGENT if isinstance(results.get(RUN_CHECKED_AGENT), dict) else RUN_AGENT
    result = results.get(agent)
    episodes = result.get("episodes", []) if isinstance(result, dict) else []
    return OutcomeOnTestDays(
        evaluation=evaluation,
        agent=agent,
        survival=_number(result, "survival_mean"),
        do_nothing=_number(results.get(DO_NOTHING), "survival_mean"),
        simulations_per_step=_number(result, "simulate_calls_per_step"),
        episodes=len(episodes) if isinstance(episodes, list) else 0,
    )


def _finished_test_evaluations() -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(split=DEPLOY_SPLIT, status=JobStatus.SUCCEEDED).order_by(
        "-finished_at", "-id"
    )


def runs_test_outcomes(*, runs: Iterable[TrainingRun]) -> dict[int, OutcomeOnTestDays]:
    """Each run's newest finished evaluation on test days, as an :class:`OutcomeOnTestDays`, by run id, in
    one query; a run without one is absent."""
    outcomes: dict[int, OutcomeOnTestDays] = {}
    for evaluation in _finished_test_evaluations().filter(run__in=[run.pk for run in runs]):
        if evaluation.run_id not in outcomes:
            outcomes[evaluation.run_id] = outcome_on_test_days(evaluation=evaluation)
    return outcomes


@dataclass(frozen=True)
class DeployCheck:
    """What the deploy guard finds for a checkpoint: the newest finished evaluation of it on test
    days, and ``refusal``, what is missing for a deploy without an override (empty: nothing)."""

    checkpoint: Checkpoint
    outcome: OutcomeOnTestDays | None
    refusal: str

    @property
    def passed(self) -> bool:
        return not self.refusal


def deploy_check(*, checkpoint: Checkpoint) -> DeployCheck:
    """The deploy guard: deploying ``checkpoint`` without an override needs a finished evaluation
    of it on test days in which the policy as deployed (checked by simulation) survives at least as
    long as do-nothing, on average. The newest such evaluation is the one read."""
    run_id, step = checkpoint.run_id, checkpoint.step
    evaluation = _finished_test_evaluations().filter(checkpoint=checkpoint).first()
    if evaluation is None:
        pending = checkpoint.evaluations.filter(
            split=DEPLOY_SPLIT, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)
        ).first()
        if pending is not None:
            refusal = (
                f"evaluation {pending.pk} of run {run_id} on test days is {pending.status}, not finished"
            )
        else:
            refusal = f"run {run_id} has no finished evaluation on test days of its checkpoint at step {step}"
        return DeployCheck(checkpoint=checkpoint, outcome=None, refusal=refusal)
    outcome = outcome_on_test_days(evaluation=evaluation)
    where = f"evaluation {evaluation.pk} (test days, {evaluation.nb_episode} episodes)"
    if outcome.do_nothing is None:
        refusal = f"{where} has no do-nothing figure to compare with (do-nothing was not among its baselines)"
    elif outcome.survival is None:
        refusal = f"{where} has no survival figure for {outcome.agent_label}"
    elif not outcome.at_least_do_nothing:
        refusal = (
            f"in {where} {outcome.agent_label} survives {outcome.survival:.3f} of the steps on average, "
            f"below do-nothing's {outcome.do_nothing:.3f}"
        )
    else:
        refusal = ""
    return DeployCheck(checkpoint=checkpoint, outcome=outcome, refusal=refusal)


def checkpoint_get(*, run_id: int, pk: int) -> Checkpoint | None:
    return Checkpoint.objects.select_related("run").filter(run_id=run_id, pk=pk).first()


def _sources() -> list[tuple[str, Any, Any]]:
    from webapp.review.models import Refinement

    return [
        ("metrics", MetricPoint, run_messages.metric_message),
        ("episode", EpisodeRecord, run_messages.episode_message),
        ("checkpoint", Checkpoint, run_messages.checkpoint_message),
        ("finetune", FinetuneRecord, run_messages.finetune_message),
        ("refinement", Refinement, run_messages.refinement_message),
    ]


def _status_key(run: TrainingRun) -> list[Any]:
    return [run.status, run.attempt, run.progress_step, run.cancel_requested]


def run_live_snapshot(*, run_id: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """Every live message of the run so far (the newest ``SNAPSHOT_LIMIT`` of each kind), and the
    cursor to ask for newer ones. None if the run does not exist."""
    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    messages = [run_messages.status_message(run)]
    cursor: dict[str, Any] = {"status": _status_key(run)}
    for kind, model, build in _sources():
        rows = list(model.objects.filter(run_id=run_id).order_by("-id")[:SNAPSHOT_LIMIT])
        rows.reverse()
        messages.extend(build(row) for row in rows)
        cursor[kind] = rows[-1].pk if rows else 0
    return messages, cursor


def run_live_since(*, run_id: int, cursor: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Live messages for rows written after ``cursor`` (and the run's status if it changed)."""
    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None:
        return [], cursor
    cursor = dict(cursor)
    messages = []
    if _status_key(run) != cursor.get("status"):
        messages.append(run_messages.status_message(run))
        cursor["status"] = _status_key(run)
    for kind, model, build in _sources():
        rows = list(
            model.objects.filter(run_id=run_id, pk__gt=cursor.get(kind, 0)).order_by("id")[:SNAPSHOT_LIMIT]
        )
        messages.extend(build(row) for row in rows)
        if rows:
            cursor[kind] = rows[-1].pk
    return messages, cursor


def run_metric_points(*, run: TrainingRun, after_id: int = 0, limit: int = 1000) -> list[MetricPoint]:
    """The run's metric points with an id above ``after_id``, oldest first (a page of them)."""
    return list(run.metrics.filter(pk__gt=after_id).order_by("id")[:limit])


# --- comparing runs: their curves overlaid, their evaluations side by side ---

COMPARE_MAX_RUNS = 10


def runs_for_compare(*, pks: list[int]) -> tuple[list[TrainingRun], list[int]]:
    """The runs asked for, in the order asked (each once), and the ids no run has."""
    found = {run.pk: run for run in _with_outcomes(TrainingRun.objects.filter(pk__in=pks))}
    ordered = list(dict.fromkeys(pks))
    return [found[pk] for pk in ordered if pk in found], [pk for pk in ordered if pk not in found]


def _series(rows: list[tuple[int, float | None]]) -> dict[str, list]:
    kept = [(step, value) for step, value in rows if isinstance(value, (int, float))]
    return {"step": [step for step, _ in kept], "value": [value for _, value in kept]}


def run_curves(*, run: TrainingRun) -> dict[str, Any]:
    """A run's learning curves, by environment step: each episode's survival (fraction of its
    length) and reward, and every reported metric under its metrics.jsonl name (the newest
    ``SNAPSHOT_LIMIT`` rows of each kind, as on the run's page)."""
    episodes = list(
        EpisodeRecord.objects.filter(run=run)
        .order_by("-id")
        .values_list("step", "steps_survived", "max_steps", "reward")[:SNAPSHOT_LIMIT]
    )
    episodes.sort(key=lambda row: row[0])
    points = list(
        MetricPoint.objects.filter(run=run).order_by("-id").values_list("step", "values")[:SNAPSHOT_LIMIT]
    )
    points.sort(key=lambda row: row[0])
    names = sorted({name for _, values in points for name in values})
    return {
        "run": run.pk,
        "name": f"#{run.pk}" + (f" {run.label}" if run.label else ""),
        "survival": _series(
            [(step, survived / length if length else 0.0) for step, survived, length, _ in episodes]
        ),
        "reward": _series([(step, reward) for step, *_, reward in episodes]),
        "metrics": {name: _series([(step, values.get(name)) for step, values in points]) for name in names},
    }


def _agent_figures(result: Any) -> dict[str, Any]:
    """Survival, reward and decision time of one agent in one evaluation (mean and std over its
    episodes; the reward's std is computed here from the episodes, evaluate() reports its mean)."""
    import statistics

    result = result if isinstance(result, dict) else {}
    rewards = [e["reward"] for e in result.get("episodes", []) if isinstance(e, dict) and "reward" in e]
    return {
        "survival_mean": result.get("survival_mean"),
        "survival_std": result.get("survival_std"),
        "reward_mean": result.get("reward_mean"),
        "reward_std": statistics.pstdev(rewards) if rewards else None,
        "decision_ms_p50": result.get("decision_ms_p50"),
        "decision_ms_p95": result.get("decision_ms_p95"),
        "simulate_calls_per_step": result.get("simulate_calls_per_step"),
        "episodes": len(rewards),
    }


def evaluation_comparison(*, runs: list[TrainingRun]) -> list[dict[str, Any]]:
    """The runs' finished evaluations, grouped by the episodes they played (env, split, episodes,
    grid seeds): one row per run evaluation (with ``checked``, the same policy checked by
    simulation as deployed, when the evaluation played it), then one per baseline (from the newest
    evaluation of the group that has it: on the same episodes a baseline plays the same)."""
    evaluations = (
        Evaluation.objects.filter(run__in=runs, status=JobStatus.SUCCEEDED)
        .select_related("run", "checkpoint")
        .order_by("-finished_at", "-id")
    )
    groups: dict[tuple, dict[str, Any]] = {}
    for evaluation in evaluations:
        own = evaluation.results.get(RUN_AGENT, {}) if isinstance(evaluation.results, dict) else {}
        seeds = tuple(own.get("seeds", ())) if isinstance(own, dict) else ()
        key = (evaluation.run.env, evaluation.split, evaluation.nb_episode, seeds)
        group = groups.setdefault(
            key,
            {
                "env": key[0],
                "split": key[1],
                "nb_episode": key[2],
                "seeds": list(seeds),
                "runs": [],
                "baselines": {},
            },
        )
        checked = evaluation.results.get(RUN_CHECKED_AGENT)
        group["runs"].append(
            {
                "run": evaluation.run,
                "evaluation": evaluation,
                **_agent_figures(own),
                "checked": _agent_figures(checked) if isinstance(checked, dict) else None,
            }
        )
        for agent, result in evaluation.results.items():
            if agent not in RUN_LABELS and agent not in group["baselines"]:
                group["baselines"][agent] = {
                    "agent": agent,
                    "evaluation": evaluation,
                    **_agent_figures(result),
                }
    order = {run.pk: index for index, run in enumerate(runs)}
    for group in groups.values():
        group["runs"].sort(key=lambda row: (order[row["run"].pk], -row["evaluation"].pk))
        group["baselines"] = sorted(group["baselines"].values(), key=lambda row: row["agent"])
    return list(groups.values())
