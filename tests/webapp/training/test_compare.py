"""Runs list outcomes and the comparison page: each run's best validation survival, curves
overlaid, evaluations side by side with the baselines, and clear refusals."""

from __future__ import annotations

import json
import re
from html import unescape

import numpy as np
import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from webapp.jobs.services import job_fail, job_finish, job_start
from webapp.training.models import Checkpoint, EpisodeRecord, Evaluation, MetricPoint, TrainingRun
from webapp.training.selectors.compare import COMPARE_MAX_RUNS

pytestmark = pytest.mark.django_db


def report(agent: str, episodes: list[tuple[int, int, float]], decision_ms=(0.5, 2.0)) -> dict:
    """An evaluate() report over (steps survived, episode length, reward) episodes."""
    survival = [survived / length for survived, length, _ in episodes]
    return {
        "agent": agent,
        "split": "validation",
        "seeds": [0],
        "episodes": [
            {"scenario": f"000@{i}", "seed": 0, "steps_survived": s, "max_steps": n, "reward": r}
            for i, (s, n, r) in enumerate(episodes)
        ],
        "survival_mean": float(np.mean(survival)),
        "survival_std": float(np.std(survival)),
        "reward_mean": float(np.mean([r for *_, r in episodes])),
        "decision_ms_p50": decision_ms[0],
        "decision_ms_p95": decision_ms[1],
    }


BASELINES = {
    "do-nothing": report("do-nothing", [(100, 200, 10.0), (50, 200, 4.0)], (0.01, 0.02)),
    "reconnect": report("reconnect", [(150, 200, 12.0), (50, 200, 4.0)], (0.05, 0.07)),
}


def evaluate(run: TrainingRun, user, own: dict | None, split: str = "validation", baselines=BASELINES):
    """A finished evaluation of the run's checkpoint (``own`` None: a failed one)."""
    checkpoint = run.checkpoints.first() or Checkpoint.objects.create(run=run, step=300, path="/x.pt")
    evaluation = Evaluation.objects.create(
        run=run, checkpoint=checkpoint, split=split, nb_episode=2, requested_by=user
    )
    return evaluation_end(evaluation, None if own is None else {"ace": own, **baselines})


def evaluation_end(evaluation: Evaluation, results: dict | None) -> Evaluation:
    """What the worker records: the evaluation claimed, then finished with ``results`` (None: failed)."""
    job_start(model=Evaluation, job_id=evaluation.pk, worker_token="t")
    if results is None:
        return job_fail(model=Evaluation, job_id=evaluation.pk, worker_token="t", error="boom")
    return job_finish(model=Evaluation, job_id=evaluation.pk, worker_token="t", results=results)


def _cell_text(html: str, row_id: str, column: int) -> str:
    row = re.search(rf'<tr id="{row_id}">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    return unescape(re.sub(r"<[^>]+>", "", cells[column])).strip()


def test_runs_list_shows_each_runs_best_validation_survival_and_status(engineer, make_run):
    evaluated, fresh = make_run(label="evaluated"), make_run(label="fresh")
    evaluate(evaluated, engineer, report("sac", [(100, 200, 5.0), (100, 200, 5.0)]))  # 0.5
    evaluate(evaluated, engineer, report("sac", [(150, 200, 5.0), (150, 200, 5.0)]))  # 0.75, the best
    evaluate(
        evaluated, engineer, report("sac", [(200, 200, 5.0), (200, 200, 5.0)]), split="test"
    )  # not validation
    evaluate(evaluated, engineer, None)  # failed: no figure
    html = client_for(engineer).get(reverse("training:run_list")).content.decode()
    # columns: select, run, env, status, progress, recipe, llm, best validation survival
    assert _cell_text(html, f"run-{evaluated.pk}", 7) == "0.750"
    assert _cell_text(html, f"run-{fresh.pk}", 7) == "—"
    assert _cell_text(html, f"run-{fresh.pk}", 3) == "queued"
    assert _cell_text(html, f"run-{fresh.pk}", 5) == "custom"  # the tiny test config is no recipe
    assert f'name="run" value="{evaluated.pk}"' in html and 'id="compare"' in html


def test_best_validation_survival_is_the_best_of_evaluations_and_in_training_validations(engineer, make_run):
    """The trainer's validations during training (``eval/validation_survival`` metric points) count
    as much as validation evaluations: the runs list shows the best of both."""
    from ace_core.events import MetricsEvent
    from webapp.training.selectors.runs import run_list
    from webapp.training.services.events import metrics_record

    metric_only, both, evaluation_only, neither = (make_run(label=label) for label in ("m", "b", "e", "n"))
    for run, values in (
        (metric_only, [0.4, 0.7, float("nan")]),
        (both, [0.6]),
        (neither, []),
    ):
        for step, value in enumerate(values, start=1):
            event = MetricsEvent(
                step=step * 50, values={"eval/validation_survival": value, "charts/SPS": 9.0}
            )
            metrics_record(run_id=run.pk, event=event)
        # metric points of other metrics only: no validation figure
        metrics_record(run_id=run.pk, event=MetricsEvent(step=500, values={"losses/qf1_loss": 5.0}))
    evaluate(both, engineer, report("sac", [(150, 200, 5.0)]))  # 0.75 beats the metric's 0.6
    evaluate(evaluation_only, engineer, report("sac", [(100, 200, 5.0)]))  # 0.5
    best = {run.pk: run.best_validation_survival for run in run_list()}
    assert best[metric_only.pk] == pytest.approx(0.7)
    assert best[both.pk] == pytest.approx(0.75)
    assert best[evaluation_only.pk] == pytest.approx(0.5)
    assert best[neither.pk] is None
    html = client_for(engineer).get(reverse("training:run_list")).content.decode()
    assert _cell_text(html, f"run-{metric_only.pk}", 7) == "0.700"


def test_the_compare_page_offers_the_validation_curve_under_a_readable_name(engineer, make_run):
    run = make_run()
    MetricPoint.objects.create(run=run, step=100, values={"eval/validation_survival": 0.5})
    MetricPoint.objects.create(run=run, step=200, values={"eval/validation_survival": 0.8})
    response = client_for(engineer).get(reverse("training:run_compare"), {"run": [run.pk]})
    curve = response.context["curves"][0]["metrics"]["eval/validation_survival"]
    assert curve == {"step": [100, 200], "value": [0.5, 0.8]}
    html = response.content.decode()
    labels = json.loads(
        html.split('id="compare-metric-labels" type="application/json">')[1].split("</script>")[0]
    )
    assert labels["eval/validation_survival"].startswith("validation survival")


def test_compare_page_shows_each_run_beside_the_baselines_mean_and_std(engineer, make_run):
    first, second = make_run(label="first"), make_run(label="second")
    evaluate(first, engineer, report("sac", [(200, 200, 30.0), (100, 200, 10.0)], (0.4, 0.9)))
    evaluate(second, engineer, report("sac", [(150, 200, 20.0), (150, 200, 20.0)], (0.3, 0.6)))
    for run, survived in ((first, (10, 20)), (second, (5, 20))):
        EpisodeRecord.objects.create(
            run=run,
            step=50,
            index=0,
            scenario="s",
            steps_survived=survived[0],
            max_steps=survived[1],
            reward=1.0,
        )
        MetricPoint.objects.create(run=run, step=50, values={"losses/qf1_loss": 2.5, "charts/SPS": 100.0})

    response = client_for(engineer).get(reverse("training:run_compare"), {"run": [second.pk, first.pk]})
    assert response.status_code == 200
    html = unescape(response.content.decode())
    table = html[html.index('id="evaluations-1"') :]
    rows = re.findall(r"<tr class=\"(?:highlight|baseline)\"[^>]*>(.*?)</tr>", table, re.S)
    texts = [
        " | ".join(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S))
        for r in rows
    ]
    # the runs in the order asked, then the baselines; survival and reward mean +- std over episodes
    assert texts[0].startswith(f"run #{second.pk} second | 0.750 ± 0.000 | 20.0 ± 0.0 | 0.30 / 0.60 | — | 2")
    assert texts[1].startswith(f"run #{first.pk} first | 0.750 ± 0.250 | 20.0 ± 10.0 | 0.40 / 0.90 | — | 2")
    assert texts[2].startswith("do-nothing | 0.375 ± 0.125 | 7.0 ± 3.0 | 0.01 / 0.02 | — | 2")
    assert texts[3].startswith("reconnect | 0.500 ± 0.250 | 8.0 ± 4.0 | 0.05 / 0.07 | — | 2")
    assert len(texts) == 4 and "not-evaluated" not in html

    curves = {curve["run"]: curve for curve in response.context["curves"]}
    assert curves[first.pk]["survival"] == {"step": [50], "value": [0.5]}
    assert curves[second.pk]["metrics"]["losses/qf1_loss"] == {"step": [50], "value": [2.5]}
    reported = MetricPoint.objects.get(run=second).created_at.isoformat()
    assert curves[second.pk]["reported"] == {"step": [50], "time": [reported]}  # the wall-clock axis
    # the run page's controls: EMA smoothing, log scale, x axis
    assert all(f'id="{control}"' in html for control in ("chart-smoothing", "chart-log", "chart-x"))
    assert 'type="range" id="chart-smoothing"' in html and "compare-smoothing" not in html
    assert json.loads(html.split('id="compare-curves" type="application/json">')[1].split("</script>")[0])
    assert "vendor/plotly.min.js" in html and "js/run_compare.js" in html


def test_evaluations_on_different_episodes_are_compared_in_separate_tables(engineer, make_run):
    on_validation, on_test, never = make_run(), make_run(), make_run()
    evaluate(on_validation, engineer, report("sac", [(200, 200, 1.0)]))
    evaluate(on_test, engineer, report("sac", [(100, 200, 1.0)]), split="test", baselines={})
    evaluate(never, engineer, None)
    response = client_for(engineer).get(
        reverse("training:run_compare"), {"run": [on_validation.pk, on_test.pk, never.pk]}
    )
    groups = response.context["groups"]
    assert sorted((g["split"], [r["run"].pk for r in g["runs"]]) for g in groups) == [
        ("test", [on_test.pk]),
        ("validation", [on_validation.pk]),
    ]
    assert [row["agent"] for g in groups if g["split"] == "validation" for row in g["baselines"]] == [
        "do-nothing",
        "reconnect",
    ]
    not_evaluated = response.content.decode().split('id="not-evaluated"')[1].split("</p>")[0]
    assert f"#{never.pk}" in not_evaluated and f"#{on_test.pk}" not in not_evaluated


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({"run": ["{missing}"]}, 404, "no run {missing}; choose runs from the runs list"),
        ({"run": ["{run}", "{missing}"]}, 404, "no run {missing}"),
        ({"run": ["abc"]}, 400, "run id 'abc' is not a run number; give whole numbers"),
        ({"run": ["-3"]}, 400, "run id '-3' is not a run number"),
        ({}, 400, "choose at least one run to compare"),
        (
            {"run": [str(n) for n in range(1, COMPARE_MAX_RUNS + 2)]},
            400,
            f"compare at most {COMPARE_MAX_RUNS}",
        ),
    ],
)
def test_bad_run_ids_get_a_clear_4xx(engineer, make_run, query, status, message):
    run = make_run()
    fill = {"run": run.pk, "missing": run.pk + 999}
    query = {key: [value.format(**fill) for value in values] for key, values in query.items()}
    response = client_for(engineer).get(reverse("training:run_compare"), query)
    assert response.status_code == status
    assert message.format(**fill) in unescape(response.content.decode())


def test_compare_is_for_engineers_only(role_users, make_run):
    run = make_run()
    url = f"{reverse('training:run_compare')}?run={run.pk}"
    for role in ("operator", "reviewer", "none"):
        assert client_for(role_users[role]).get(url).status_code == 403, role
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("accounts:login"))
    assert client_for(role_users["engineer"]).get(url).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_real_evaluation_reaches_the_runs_list_and_the_compare_page(make_run, engineer, settings):
    from tests.webapp.training.test_tasks import work_off_queue
    from webapp.training.services.evaluations import evaluation_request

    settings.GRIDACE_BASELINES = ["do-nothing"]  # the real evaluator: a few seconds an agent here
    run = make_run(steps=100, label="real")
    work_off_queue()
    evaluation = evaluation_request(
        run=TrainingRun.objects.get(pk=run.pk), user=engineer, split="validation", nb_episode=1
    )
    work_off_queue()
    evaluation.refresh_from_db()
    own, baseline = evaluation.results["ace"], evaluation.results["do-nothing"]

    client = client_for(engineer)
    listing = client.get(reverse("training:run_list")).content.decode()
    assert _cell_text(listing, f"run-{run.pk}", 7) == f"{own['survival_mean']:.3f}"
    assert _cell_text(listing, f"run-{run.pk}", 3) == "succeeded"

    response = client.get(reverse("training:run_compare"), {"run": run.pk})
    [group] = response.context["groups"]
    assert (group["split"], group["seeds"]) == ("validation", own["seeds"])
    assert group["runs"][0]["survival_mean"] == own["survival_mean"]
    checked = evaluation.results["ace-checked"]
    assert group["runs"][0]["checked"]["survival_mean"] == checked["survival_mean"]
    assert group["runs"][0]["checked"]["simulate_calls_per_step"] == checked["simulate_calls_per_step"]
    assert f"run #{run.pk}, checked by simulation" in response.content.decode()
    # the checked policy is the run's, not a baseline
    assert [(row["agent"], row["survival_mean"]) for row in group["baselines"]] == [
        ("do-nothing", baseline["survival_mean"])
    ]
    [curve] = response.context["curves"]
    assert curve["metrics"]["losses/qf1_loss"]["step"] == [50, 100]  # the trainer's own metric names


def test_runs_are_evaluated_on_the_validation_split_unless_asked_otherwise(engineer, make_run):
    from tests.webapp.training.test_views import _succeeded_run

    run = _succeeded_run(make_run)
    html = client_for(engineer).get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert '<option value="validation" selected>validation</option>' in html


def _words(response) -> str:
    return " ".join(response.content.decode().split())


def _validate(run: TrainingRun, points: list[tuple[int, float, int | None]]) -> None:
    """The trainer's validations as its sink records them: (step, survival, decisions)."""
    from ace_core.events import MetricsEvent
    from webapp.training.services.events import metrics_record

    for step, survival, decisions in points:
        values = {"eval/validation_survival": survival, "eval/validation_reward": 1.0}
        if decisions is not None:
            values["eval/validation_decisions"] = float(decisions)
        metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values=values))


def test_the_run_page_says_when_best_pt_is_the_policy_the_run_started_from(engineer, make_run):
    """A run none of whose later validations beat its first keeps its starting policy as best.pt
    (a clone, or fresh networks): its page says so, since deploying it deploys that policy."""
    from webapp.training.selectors.runs import run_best_policy

    stuck, learned, tied_later = make_run(label="stuck"), make_run(label="learned"), make_run(label="tied")
    _validate(stuck, [(1, 0.965, 0), (900, 0.909, 250), (1800, 0.965, 500)])  # a tie keeps the earlier
    _validate(learned, [(1, 0.948, 0), (900, 0.977, 250), (1800, 0.95, 500)])
    _validate(tied_later, [(5, 0.90, 1), (900, 0.90, 250)])  # first validated after a decision

    best = run_best_policy(run=stuck)
    assert (best.survival, best.step, best.decisions, best.validations) == (0.965, 1, 0, 3)
    assert best.is_starting_policy
    best = run_best_policy(run=learned)
    assert (best.survival, best.step, best.decisions) == (0.977, 900, 250) and not best.is_starting_policy
    assert not run_best_policy(run=tied_later).is_starting_policy
    assert run_best_policy(run=make_run(label="never validated")) is None

    client = client_for(engineer)
    html = _words(client.get(reverse("training:run_detail", args=[stuck.pk])))
    assert 'id="best-is-start"' in html and "none of its 2 later validations did better" in html
    assert "validation survival 0.965 at step 1, decision 0 (3 validations)" in html
    html = _words(client.get(reverse("training:run_detail", args=[learned.pk])))
    assert "0.977 at step 900, decision 250" in html and 'id="best-is-start"' not in html


def test_a_run_choosing_on_attacked_days_above_a_floor_names_the_policy_it_kept(engineer, make_run):
    """The page names the validation the trainer kept by the run's own choice, not the best mean."""
    from ace_core.events import MetricsEvent
    from webapp.training.selectors.runs import run_best_policy
    from webapp.training.services.events import metrics_record

    run = make_run(
        label="attacked", validation_opponent="storm", validation_decides="attacks", validation_floor=0.95
    )
    # (step, decisions, mean over the copies, the days as they are, under attacks)
    for step, decisions, mean, as_they_are, attacked in [
        (1, 0, 0.80, 1.00, 0.60),
        (900, 250, 0.85, 0.90, 0.80),  # the best mean and attacked copy, below the floor
        (1800, 500, 0.70, 0.96, 0.44),
        (2700, 750, 0.82, 1.00, 0.64),  # kept: the best attacked copy above the floor
    ]:
        values = {
            "eval/validation_survival": mean,
            "eval/validation_survival_demand_1.0": as_they_are,
            "eval/validation_survival_attacks": attacked,
            "eval/validation_decisions": float(decisions),
        }
        metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values=values))
    best = run_best_policy(run=run)
    assert (best.step, best.decisions, best.survival, best.survival_under_attacks) == (2700, 750, 0.82, 0.64)
    html = _words(client_for(engineer).get(reverse("training:run_detail", args=[run.pk])))
    assert (
        "validation survival 0.820 at step 2700, decision 750 (4 validations), chosen on the attacked copy "
        "of the days (survival 0.640 under attacks) among the policies that hold at least 0.95 of the days "
        "as they are."
    ) in html


def test_a_run_choosing_on_uneven_days_names_that_copy_and_its_survival(engineer, make_run):
    from ace_core.events import MetricsEvent
    from webapp.training.selectors.runs import run_best_policy
    from webapp.training.services.events import metrics_record

    run = make_run(
        label="uneven", validation_uneven="1.05,1.1", validation_decides="uneven", validation_floor=0.95
    )
    # (step, decisions, mean over the copies, the days as they are, uneven)
    for step, decisions, mean, as_they_are, uneven in [
        (1, 0, 0.70, 0.90, 0.62),  # the best uneven copies, below the floor
        (900, 250, 0.80, 1.00, 0.55),  # the best mean
        (1800, 500, 0.75, 1.00, 0.58),  # kept: the best uneven copies above the floor
    ]:
        values = {
            "eval/validation_survival": mean,
            "eval/validation_survival_demand_1.0": as_they_are,
            "eval/validation_survival_uneven": uneven,
            "eval/validation_decisions": float(decisions),
        }
        metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values=values))
    best = run_best_policy(run=run)
    assert (best.step, best.decisions, best.survival_uneven, best.chosen_on) == (1800, 500, 0.58, "uneven")
    html = _words(client_for(engineer).get(reverse("training:run_detail", args=[run.pk])))
    assert (
        "validation survival 0.750 at step 1800, decision 500 (3 validations), chosen on the uneven copies "
        "of the days (survival 0.580 on heavier, uneven days) among the policies that hold at least 0.95 of "
        "the days as they are."
    ) in html


def test_a_run_older_than_the_decisions_metric_counts_its_first_validation_as_the_start(engineer, make_run):
    from webapp.training.selectors.runs import run_best_policy

    old, old_learned = make_run(label="old"), make_run(label="old, learned")
    _validate(old, [(1, 0.8, None), (900, 0.7, None)])
    _validate(old_learned, [(1, 0.7, None), (900, 0.8, None)])
    assert run_best_policy(run=old).is_starting_policy
    best = run_best_policy(run=old_learned)
    assert best.decisions is None and not best.is_starting_policy
    html = _words(client_for(engineer).get(reverse("training:run_detail", args=[old_learned.pk])))
    assert "0.800 at step 900 (2 validations)" in html


def test_the_runs_list_flags_each_run_whose_best_pt_is_its_starting_policy(
    engineer, make_run, django_assert_max_num_queries
):
    """An engineer scanning the runs list sees which runs trained nothing the validation days can
    see, without opening each; the flags of a whole page come from one query."""
    from webapp.training.selectors.runs import runs_best_policies

    stuck, learned, unvalidated = make_run(label="stuck"), make_run(label="learned"), make_run(label="new")
    _validate(stuck, [(1, 0.965, 0), (900, 0.909, 250)])
    _validate(learned, [(1, 0.948, 0), (900, 0.977, 250)])
    with django_assert_max_num_queries(1):
        best = runs_best_policies(runs=[stuck, learned, unvalidated])
    assert sorted(best) == sorted([stuck.pk, learned.pk])
    assert best[stuck.pk].is_starting_policy and not best[learned.pk].is_starting_policy

    html = client_for(engineer).get(reverse("training:run_list")).content.decode()
    assert f'id="run-{stuck.pk}-best-is-start"' in html
    assert f'id="run-{learned.pk}-best-is-start"' not in html
    assert f'id="run-{unvalidated.pk}-best-is-start"' not in html
    assert " ".join(_cell_text(html, f"run-{stuck.pk}", 7).split()) == "0.965 best.pt = start"
