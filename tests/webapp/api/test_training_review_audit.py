"""Training, review and audit endpoints: the launch form's validation, cancel and resume with
their state rules, a run's tags, note and recipe and the tag filter, metrics, the review queue's
filters and final decisions, audit paging."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ace_core.events import MetricsEvent
from ace_core.training.recipes import RECIPES
from tests.webapp.api.conftest import assert_error_shape
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.review.models import RefinementStatus
from webapp.training.models import Checkpoint, TrainingRun
from webapp.training.services.events import metrics_record
from webapp.training.services.notes import run_notes_set
from webapp.training.services.runs import run_launch

pytestmark = pytest.mark.django_db


def test_launch_validates_like_the_form_and_queues_the_run(api_as, engineer):
    api = api_as(engineer)
    made = api.post("/runs", {"label": "api run", "config": {"env": "l2rpn_case14_sandbox", "steps": 500}})
    assert made.status_code == 201, made.content
    run = TrainingRun.objects.get(pk=made.json()["id"])
    assert (run.status, run.total_steps, run.label, run.launched_by) == (
        JobStatus.QUEUED,
        500,
        "api run",
        engineer,
    )
    assert run.task_id and AuditEntry.objects.filter(action="run.launch", target_id=str(run.pk)).exists()

    bad_env = assert_error_shape(api.post("/runs", {"config": {"env": "mars"}}), 400)
    assert bad_env["field"] == "config.env" and "l2rpn_case14_sandbox" in bad_env["error"]
    bad_type = assert_error_shape(api.post("/runs", {"config": {"steps": "many"}}), 400)
    assert bad_type["field"] == "config.steps"
    unknown = assert_error_shape(api.post("/runs", {"config": {"stepz": 5}}), 400)
    assert unknown["field"] == "config.stepz" and "steps" in unknown["accepted"].split(", ")
    assert TrainingRun.objects.count() == 1  # nothing half-written

    listing = api.get("/runs", status="queued").json()
    assert listing["count"] == 1 and listing["items"][0]["config"]["steps"] == 500


def test_cancel_and_resume_follow_the_runs_state(api_as, engineer, make_run, tmp_path):
    api = api_as(engineer)
    run = make_run()
    cancelled = api.post(f"/runs/{run.pk}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = assert_error_shape(api.post(f"/runs/{run.pk}/cancel"), 409)
    assert "only queued or running runs" in again["error"]
    no_checkpoint = assert_error_shape(api.post(f"/runs/{run.pk}/resume"), 409)
    assert "no checkpoint" in no_checkpoint["error"]
    assert assert_error_shape(api.post("/runs/999999/cancel"), 404)["error"] == "no run 999999"

    Checkpoint.objects.create(run=run, step=100, path=str(tmp_path / "checkpoint.pt"))
    resumed = api.post(f"/runs/{run.pk}/resume")
    assert resumed.status_code == 200 and (resumed.json()["status"], resumed.json()["attempt"]) == (
        "queued",
        2,
    )
    assert api.get(f"/runs/{run.pk}").json()["attempt"] == 2
    assert AuditEntry.objects.filter(action="run.resume", target_id=str(run.pk)).count() == 1


def test_metrics_page_by_cursor(api_as, engineer, make_run):
    run = make_run()
    for step in (10, 20, 30):
        metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values={"losses/qf1_loss": step / 10}))
    api = api_as(engineer)
    first = api.get(f"/runs/{run.pk}/metrics", limit=2).json()
    assert [p["step"] for p in first["items"]] == [10, 20]
    rest = api.get(f"/runs/{run.pk}/metrics", after=first["next_after"]).json()
    assert [p["values"]["losses/qf1_loss"] for p in rest["items"]] == [3.0]


def test_review_queue_filters_and_final_decisions(api_as, reviewer, make_run, make_refinement):
    run, other = make_run(), make_run()
    accepted = make_refinement(run, step=50, accepted=True)
    make_refinement(run, step=60, accepted=False)
    make_refinement(other, step=70, accepted=True)
    api = api_as(reviewer)
    assert api.get("/refinements").json()["count"] == 3
    assert api.get("/refinements", run=run.pk).json()["count"] == 2
    only = api.get("/refinements", run=run.pk, simulation="accepted").json()
    assert [r["id"] for r in only["items"]] == [accepted.pk]
    bad = assert_error_shape(api.get("/refinements", simulation="maybe"), 422)
    assert bad["field"] == "simulation" and "accepted" in bad["accepted"]

    url = f"/refinements/{accepted.pk}/decision"
    decided = api.post(url, {"decision": "approve", "comment": "the simulation holds"})
    assert decided.status_code == 200 and decided.json()["status"] == RefinementStatus.APPROVED
    entry = AuditEntry.objects.get(action="refinement.approve")
    assert entry.actor == reviewer and entry.comment == "the simulation holds"
    final = assert_error_shape(api.post(url, {"decision": "reject"}), 409)
    assert "decisions are final" in final["error"]
    wrong = assert_error_shape(api.post(url, {"decision": "maybe"}), 422)
    assert wrong["field"] == "decision" and "approve" in wrong["accepted"]
    assert api.get("/refinements", status="approved").json()["count"] == 1


def test_a_refinement_carries_the_reviewers_verdict_in_words(api_as, reviewer, make_run, make_refinement):
    run = make_run()
    refinements = [
        make_refinement(run, step=50, accepted=True),
        make_refinement(run, step=60, accepted=False),
    ]
    items = {r["id"]: r for r in api_as(reviewer).get("/refinements", run=run.pk).json()["items"]}
    for refinement in refinements:
        verdict = refinement.verdict  # the review page's words (webapp/review/evidence.py)
        assert (items[refinement.pk]["verdict"], items[refinement.pk]["verdict_why"]) == (
            verdict.words,
            verdict.why,
        )
    assert items[refinements[1].pk]["verdict"] == "not better than RL"  # simulation kept the RL action


def test_audit_entries_filter_and_page(api_as, reviewer, operator, make_run):
    for _ in range(3):
        make_run()
    api = api_as(reviewer)
    launches = api.get("/audit", action="run.launch", limit=2).json()
    assert launches["count"] == 3 and len(launches["items"]) == 2
    rest = api.get("/audit", action="run.launch", limit=2, offset=2).json()
    ids = [e["id"] for e in launches["items"] + rest["items"]]
    assert len(set(ids)) == 3 and ids == sorted(ids, reverse=True)
    too_many = assert_error_shape(api.get("/audit", limit=1000), 422)
    assert too_many["field"] == "limit" and too_many["accepted"] == "<= 200"
    assert assert_error_shape(api_as(operator).get("/audit"), 403)["accepted"].endswith(
        "engineer or reviewer or admin"
    )


def test_a_run_carries_its_best_validation_and_whether_best_pt_is_its_starting_policy(
    api_as, engineer, make_run
):
    """A client choosing what to deploy learns what the run page shows: best.pt's validation, and
    whether training improved on the policy the run started from."""
    api = api_as(engineer)
    stuck, learned, fresh = make_run(label="stuck"), make_run(label="learned"), make_run(label="fresh")
    for run, points in (
        (stuck, [(1, 0.96, 0), (900, 0.91, 250)]),
        (learned, [(1, 0.90, 0), (900, 0.97, 250)]),
    ):
        for step, survival, decisions in points:
            values = {"eval/validation_survival": survival, "eval/validation_decisions": float(decisions)}
            metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values=values))

    items = {item["id"]: item for item in api.get("/runs").json()["items"]}
    assert items[stuck.pk]["best_policy"] == {
        "survival": 0.96,
        "step": 1,
        "decisions": 0,
        "validations": 2,
        "survival_under_attacks": None,
        "survival_uneven": None,
        "chosen_on": "mean",
        "floor": 0.0,
        "is_starting_policy": True,
    }
    assert items[stuck.pk]["best_validation_survival"] == pytest.approx(0.96)
    assert not items[learned.pk]["best_policy"]["is_starting_policy"]
    assert items[learned.pk]["best_policy"]["decisions"] == 250
    assert items[fresh.pk]["best_policy"] is None and items[fresh.pk]["best_validation_survival"] is None
    assert api.get(f"/runs/{learned.pk}").json()["best_policy"] == items[learned.pk]["best_policy"]
    cancelled = api.post(f"/runs/{fresh.pk}/cancel").json()  # a service's run, read again with its outcome
    assert cancelled["status"] == "cancelled" and cancelled["best_policy"] is None


def test_a_run_carries_its_tags_note_and_recipe_as_the_pages_show_them(api_as, engineer, make_run):
    """What an engineer wrote on a run and the recipe it came from, read without the web pages."""
    api = api_as(engineer)
    edited = run_launch(
        config=RECIPES["sac-14bus"].config(seed=3, steps=700), launched_by=engineer, recipe="sac-14bus"
    )
    run_notes_set(run=edited, user=engineer, tags=["lr-sweep", "baseline"], note="gamma 0.99, steps cut")
    plain = make_run(label="plain")

    items = {item["id"]: item for item in api.get("/runs").json()["items"]}
    assert items[edited.pk]["tags"] == ["baseline", "lr-sweep"]
    assert items[edited.pk]["note"] == "gamma 0.99, steps cut"
    assert items[edited.pk]["recipe"] == {
        "name": "sac-14bus",
        "text": "sac-14bus, edited: steps",
        "changes": [{"setting": "steps", "recipe_value": "30000", "run_value": "700"}],
    }
    assert (items[plain.pk]["tags"], items[plain.pk]["note"]) == ([], "")
    assert items[plain.pk]["recipe"] == {"name": None, "text": "custom", "changes": []}
    assert api.get(f"/runs/{edited.pk}").json() == items[edited.pk]


def test_runs_filter_by_tag_as_the_runs_list_does(api_as, engineer, make_run):
    api = api_as(engineer)
    tagged, other, untagged = make_run(label="tagged"), make_run(label="other"), make_run(label="untagged")
    run_notes_set(run=tagged, user=engineer, tags=["sweep", "keep"], note="")
    run_notes_set(run=other, user=engineer, tags=["keep"], note="")

    sweep = api.get("/runs", tag="sweep").json()
    assert [item["id"] for item in sweep["items"]] == [tagged.pk] and sweep["count"] == 1
    assert [item["id"] for item in api.get("/runs", tag="keep").json()["items"]] == [other.pk, tagged.pk]
    assert untagged.pk in [item["id"] for item in api.get("/runs", tag="").json()["items"]]
    # a tag no run carries: nothing to show; a word that cannot be a tag: refused, saying what a tag is
    assert api.get("/runs", tag="nobody-uses").json() == {"count": 0, "limit": 50, "offset": 0, "items": []}
    malformed = assert_error_shape(api.get("/runs", tag="Not A Tag"), 400)
    assert malformed["field"] == "tag" and "'Not A Tag' is not a tag" in malformed["error"]
    assert malformed["accepted"].startswith("lower-case letters, digits")


def test_the_runs_list_reads_a_bounded_number_of_queries(
    api_as, engineer, make_run, django_assert_max_num_queries
):
    """Tags are prefetched: a page of many tagged runs costs what a page of one costs."""
    api = api_as(engineer)

    def tagged_run(index: int) -> None:
        run_notes_set(run=make_run(label=f"run {index}"), user=engineer, tags=[f"t{index}", "all"], note="")

    tagged_run(0)
    with CaptureQueriesContext(connection) as one:
        assert api.get("/runs", tag="all").json()["count"] == 1
    for index in range(1, 8):
        tagged_run(index)
    with django_assert_max_num_queries(len(one.captured_queries)):
        page = api.get("/runs", tag="all").json()
    assert page["count"] == 8 and all(len(item["tags"]) == 2 for item in page["items"])
