"""Evaluations and mines over HTTP: an evaluation is requested as the run page's Evaluate button
requests it (the same refusals, the same audit entry) and read back with its table once a worker
finished it; a mine is launched with the mine form's validation and defaults, listed and shown
with its figures and most played topologies in words."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import assert_error_shape
from tests.webapp.training.conftest import MINE_ENV, MINE_EXPERT
from tests.webapp.training.deploys import finished_evaluation, succeeded_run
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.training.models import Evaluation, Mine

pytestmark = pytest.mark.django_db


def test_an_engineer_evaluates_a_succeeded_run(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    api = api_as(engineer)
    response = api.post(f"/runs/{run.pk}/evaluations", {"split": "test", "nb_episode": 3})
    assert response.status_code == 201, response.content
    body = response.json()
    evaluation = Evaluation.objects.get(pk=body["id"])
    assert (body["run"], body["split"], body["nb_episode"], body["status"], body["checkpoint_step"]) == (
        run.pk,
        "test",
        3,
        JobStatus.QUEUED,
        300,
    )
    assert (body["rows"], body["results"], body["requested_by"]) == ([], {}, engineer.username)
    assert evaluation.task_id  # queued for a worker
    entry = AuditEntry.objects.get(action="run.evaluate")
    assert (entry.actor, entry.target_id, entry.after) == (
        engineer,
        str(run.pk),
        {"evaluation": evaluation.pk, "split": "test", "nb_episode": 3, "checkpoint_step": 300},
    )
    assert AuditEntry.objects.filter(action="api.request", actor=engineer).count() == 1

    # one evaluation at a time, as on the run page
    busy = assert_error_shape(api.post(f"/runs/{run.pk}/evaluations", {}), 409)
    assert busy["error"] == f"run {run.pk} already has an evaluation in progress; wait for it to finish"
    assert Evaluation.objects.count() == 1


def test_an_evaluation_is_refused_as_the_run_page_refuses_it(api_as, engineer, operator, make_run):
    queued = make_run()
    api = api_as(engineer)
    state = assert_error_shape(api.post(f"/runs/{queued.pk}/evaluations", {}), 409)
    assert state["error"] == f"run {queued.pk} is queued; only succeeded runs can be evaluated"
    run = succeeded_run(make_run())
    for body, field, accepted in (
        ({"split": "train"}, "split", "'validation' or 'test'"),
        ({"nb_episode": 0}, "nb_episode", ">= 1"),
        ({"nb_episode": 101}, "nb_episode", "<= 100"),
        ({"nb_episode": "5"}, "nb_episode", "an integer"),
        ({"episodes": 5}, "episodes", "only the keys the API documents (see /api/v1/docs)"),
    ):
        refusal = assert_error_shape(api.post(f"/runs/{run.pk}/evaluations", body), 422)
        assert (refusal["field"], refusal["accepted"]) == (field, accepted), body
    assert "no run 999999" in assert_error_shape(api.post("/runs/999999/evaluations", {}), 404)["error"]
    assert_error_shape(api_as(operator).post(f"/runs/{run.pk}/evaluations", {}), 403)
    assert not Evaluation.objects.exists() and not AuditEntry.objects.filter(action="run.evaluate").exists()


def test_a_finished_evaluation_reads_as_the_run_pages_table(api_as, engineer, operator, make_run):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.5, do_nothing=0.309)
    api = api_as(engineer)
    body = api.get(f"/evaluations/{evaluation.pk}").json()
    assert (body["status"], body["split"], body["run"]) == (JobStatus.SUCCEEDED, "test", run.pk)
    assert body["finished_at"] is not None and set(body["results"]) == set(evaluation.results)
    agents = [(row["agent"], row["is_run"], row["survival_mean"]) for row in body["rows"]]
    assert agents[:2] == [("this run", True, 0.2), ("this run, checked by simulation", True, 0.5)]
    assert ("do-nothing", False, 0.309) in agents
    checked = body["rows"][1]
    assert (checked["episodes"], checked["simulate_calls_per_step"], checked["decision_ms_p95"]) == (
        2,
        3.5,
        2.0,
    )

    assert "no evaluation 999999" in assert_error_shape(api.get("/evaluations/999999"), 404)["error"]
    assert_error_shape(api_as(operator).get(f"/evaluations/{evaluation.pk}"), 403)


def test_a_mine_is_launched_with_the_forms_defaults_and_listed(api_as, engineer, mines_dir):
    api = api_as(engineer)
    response = api.post(
        "/mines",
        {"env": MINE_ENV, "expert": "greedy:threshold=0.75", "seeds": 1, "episodes": 1, "episode_length": 8},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    mine = Mine.objects.get(pk=body["id"])
    assert (body["name"], body["status"], body["done"], body["total"], body["launched_by"]) == (
        mine.name,
        JobStatus.QUEUED,
        0,
        None,
        engineer.username,
    )
    # the settings left out keep the form's defaults: the mine the command line would make
    assert (mine.spec["opponent"], mine.spec["demand_scale"], mine.spec["split"]) == ("env", 1.0, "train")
    assert mine.task_id
    entry = AuditEntry.objects.get(action="mine.launch")
    assert (entry.actor, entry.target_id) == (engineer, str(mine.pk))
    assert entry.after == {**mine.spec, "out_dir": mine.out_dir}

    listing = api.get("/mines").json()
    assert [launch["id"] for launch in listing["launches"]] == [mine.pk]
    shown = api.get(f"/mines/{mine.name}").json()
    assert (shown["summary"], shown["top_actions"], shown["launch"]["status"]) == (None, [], JobStatus.QUEUED)

    again = assert_error_shape(
        api.post(
            "/mines",
            {
                "env": MINE_ENV,
                "expert": "greedy:threshold=0.75",
                "seeds": 1,
                "episodes": 1,
                "episode_length": 8,
            },
        ),
        409,
    )
    assert again["error"] == f"mine {mine.name} is already queued; follow it on its page"
    assert Mine.objects.count() == 1


def test_a_finished_mine_is_listed_and_shown_with_its_topologies_in_words(
    api_as,
    engineer,
    operator,
    mines_dir,
    finished_mine,
):
    folder, summary = finished_mine
    api = api_as(engineer)
    listed = api.get("/mines").json()
    mine = next(item for item in listed["finished"] if item["name"] == folder.name)
    assert (mine["env"], mine["expert"], mine["seeds"], mine["episode_length"]) == (
        MINE_ENV,
        MINE_EXPERT,
        1,
        16,
    )
    assert mine["decisions"] == summary["decisions"] and "path" not in mine

    shown = api.get(f"/mines/{folder.name}").json()
    assert shown["summary"] == mine and shown["launch"] is None
    top = shown["top_actions"][0]
    assert top["count"] >= 1 and 0 < top["share"] <= 1 and top["description"]

    # the same settings again: already finished, nothing queued
    again = assert_error_shape(
        api.post(
            "/mines",
            {"env": MINE_ENV, "expert": MINE_EXPERT, "seeds": 1, "episodes": 1, "episode_length": 16},
        ),
        409,
    )
    assert "is already finished with these settings" in again["error"]
    assert "no mine 'no-such-mine'" in assert_error_shape(api.get("/mines/no-such-mine"), 404)["error"]
    assert_error_shape(api.get("/mines/" + "x" * 300), 404)
    for path in ("/mines", f"/mines/{folder.name}"):
        assert_error_shape(api_as(operator).get(path), 403)
    assert not Mine.objects.exists()


def test_a_mine_launch_is_refused_as_the_mine_form_refuses_it(api_as, engineer, operator, mines_dir):
    api = api_as(engineer)
    for body, status, field, expected in (
        ({"env": MINE_ENV, "expert": "bogus"}, 400, "expert", "accepted: greedy, greedy:BUDGET"),
        ({"env": MINE_ENV, "seeds": 0}, 400, "seeds", "accepted: 1 to 50"),
        ({"env": MINE_ENV, "demand_scale": 2.0}, 400, "demand_scale", "accepted: 0.8 to 1.3"),
        (
            {"env": MINE_ENV, "opponent": "pirate"},
            400,
            "opponent",
            "pirate is not one of the available choices",
        ),
        ({"env": "nowhere"}, 400, "env", "unknown env nowhere; available here:"),
        ({"env": MINE_ENV, "expert": "greedy:actions=/etc/passwd"}, 400, "expert", "inside the data folder"),
        ({"env": MINE_ENV, "seed": 1}, 422, "seed", "only the keys the API documents"),
        ({"expert": "greedy"}, 422, "env", None),
    ):
        refusal = assert_error_shape(api.post("/mines", body), status)
        text = f"{refusal['error']}; accepted: {refusal['accepted']}"
        assert refusal["field"] == field and (expected is None or expected in text), (body, refusal)
    assert_error_shape(api_as(operator).post("/mines", {"env": MINE_ENV}), 403)
    assert not Mine.objects.exists() and not AuditEntry.objects.filter(action="mine.launch").exists()
