"""The comparison page: the runs compared (each once, in the order asked), their learning curves
to overlay, their finished evaluations side by side (grouped by the episodes they played, with
the baselines of each group), and the configuration table: only the settings that differ between
the runs, one row per setting and one value per run, in words."""

from __future__ import annotations

from typing import Any

from webapp.audit.summaries import value_text
from webapp.jobs.models import JobStatus
from webapp.training.models import EpisodeRecord, Evaluation, MetricPoint, TrainingRun
from webapp.training.selectors.evaluations import RUN_AGENT, RUN_CHECKED_AGENT, RUN_LABELS
from webapp.training.selectors.live import SNAPSHOT_LIMIT
from webapp.training.selectors.runs import with_outcomes

COMPARE_MAX_RUNS = 10


def runs_for_compare(*, pks: list[int]) -> tuple[list[TrainingRun], list[int]]:
    """The runs asked for, in the order asked (each once), and the ids no run has."""
    found = {run.pk: run for run in with_outcomes(TrainingRun.objects.filter(pk__in=pks))}
    ordered = list(dict.fromkeys(pks))
    return [found[pk] for pk in ordered if pk in found], [pk for pk in ordered if pk not in found]


def _series(rows: list[tuple[int, float | None]]) -> dict[str, list]:
    kept = [(step, value) for step, value in rows if isinstance(value, (int, float))]
    return {"step": [step for step, _ in kept], "value": [value for _, value in kept]}


def run_curves(*, run: TrainingRun) -> dict[str, Any]:
    """A run's learning curves, by environment step: each episode's survival (fraction of its
    length) and reward, every reported metric under its metrics.jsonl name, and when each metric
    report came (the charts' wall-clock axis); the newest ``SNAPSHOT_LIMIT`` rows of each kind, as
    on the run's page."""
    episodes = list(
        EpisodeRecord.objects.filter(run=run)
        .order_by("-id")
        .values_list("step", "steps_survived", "max_steps", "reward")[:SNAPSHOT_LIMIT]
    )
    episodes.sort(key=lambda row: row[0])
    points = list(
        MetricPoint.objects.filter(run=run)
        .order_by("-id")
        .values_list("step", "values", "created_at")[:SNAPSHOT_LIMIT]
    )
    points.sort(key=lambda row: row[0])
    names = sorted({name for _, values, _ in points for name in values})
    return {
        "run": run.pk,
        "name": f"#{run.pk}" + (f" {run.label}" if run.label else ""),
        "survival": _series(
            [(step, survived / length if length else 0.0) for step, survived, length, _ in episodes]
        ),
        "reward": _series([(step, reward) for step, *_, reward in episodes]),
        "metrics": {
            name: _series([(step, values.get(name)) for step, values, _ in points]) for name in names
        },
        "reported": {
            "step": [step for step, *_ in points],
            "time": [created_at.isoformat() for *_, created_at in points],
        },
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


def config_differences(*, runs: list[TrainingRun]) -> list[tuple[str, list[str]]]:
    """(setting, each run's value in words, in the runs' order) for every setting whose value is
    not the same in all ``runs``, in the order the configs list them; a setting a run's config
    lacks (a run older than it) counts as a value of its own ("–")."""
    names = dict.fromkeys(name for run in runs for name in run.config)
    rows = []
    for name in names:
        values = [run.config.get(name) for run in runs]
        if any(value != values[0] for value in values[1:]):
            rows.append((name, [value_text(value) for value in values]))
    return rows
