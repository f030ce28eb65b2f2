"""Deploying over HTTP holds the pages' guard: refused (409, naming what is missing) without a
finished evaluation on test days at least at do-nothing's survival, unless an override gives a
written reason, which the audit keeps; rollback to the deployment before; and a launch that needs
an unconfigured LLM server is refused, naming it."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import assert_error_shape
from tests.webapp.training.deploys import finished_evaluation, succeeded_run
from webapp.audit.models import AuditEntry
from webapp.training.models import Deployment, TrainingRun

pytestmark = pytest.mark.django_db

OVERRIDE = "emergency: the deployed policy fails on tonight's maintenance plan"


def test_a_deploy_without_an_evaluation_is_refused_and_writes_nothing(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    api = api_as(engineer)
    check = api.get(f"/runs/{run.pk}/deploy-check").json()
    assert (check["passed"], check["outcome"], check["checkpoint_step"]) == (False, None, 300)
    assert f"run {run.pk} has no finished evaluation on test days" in check["refusal"]

    body = assert_error_shape(api.post(f"/runs/{run.pk}/deploy", {"comment": "go"}), 409)
    assert body["field"] == "override_reason"
    assert body["error"].startswith(f"deploy refused: run {run.pk} has no finished evaluation on test days")
    assert "or an override with a written reason (10 to 500 characters)" in body["accepted"]
    assert not Deployment.objects.exists()
    assert not AuditEntry.objects.filter(action__in=["checkpoint.deploy", "api.request"]).exists()

    short = assert_error_shape(api.post(f"/runs/{run.pk}/deploy", {"override_reason": "because"}), 409)
    assert "the override's reason is 7 characters long" in short["error"]
    assert not Deployment.objects.exists()


def test_a_policy_below_do_nothing_is_refused_with_the_figures(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.010, do_nothing=0.309)
    api = api_as(engineer)
    check = api.get(f"/runs/{run.pk}/deploy-check").json()
    assert check["outcome"] == {
        "evaluation": evaluation.pk,
        "episodes": 2,
        "policy": "ace-checked",
        "survival": 0.010,
        "do_nothing_survival": 0.309,
        "simulations_per_step": 3.5,
        "at_least_do_nothing": False,
    }
    body = assert_error_shape(api.post(f"/runs/{run.pk}/deploy", {}), 409)
    assert "survives 0.010 of the steps on average, below do-nothing's 0.309" in body["error"]
    assert not Deployment.objects.exists()


def test_an_override_deploys_and_the_audit_keeps_its_reason(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    response = api_as(engineer).post(
        f"/runs/{run.pk}/deploy", {"comment": "drill", "override_reason": OVERRIDE}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["run"], body["checkpoint_step"], body["override_reason"], body["evaluation"]) == (
        run.pk,
        300,
        OVERRIDE,
        None,
    )
    assert body["current"] is True and body["deployed_by"] == engineer.username
    entry = AuditEntry.objects.get(action="checkpoint.deploy")
    assert entry.after["override_reason"] == OVERRIDE and entry.after["guard"]["passed"] is False
    assert AuditEntry.objects.filter(action="api.request").count() == 1


def test_a_passing_guard_deploys_without_override(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.5, do_nothing=0.309)
    api = api_as(engineer)
    assert api.get(f"/runs/{run.pk}/deploy-check").json()["passed"] is True
    response = api.post(f"/runs/{run.pk}/deploy", {})
    assert response.status_code == 201, response.content
    assert (response.json()["evaluation"], response.json()["override_reason"]) == (evaluation.pk, "")


def test_rollback_over_http_returns_to_the_deployment_before(api_as, engineer, operator, make_run):
    first, second = succeeded_run(make_run()), succeeded_run(make_run())
    api = api_as(engineer)
    a = api.post(f"/runs/{first.pk}/deploy", {"override_reason": OVERRIDE}).json()
    b = api.post(f"/runs/{second.pk}/deploy", {"override_reason": OVERRIDE}).json()
    assert b["previous"] == a["id"]

    response = api.post(f"/deployments/{b['id']}/rollback", {"comment": "back"})
    assert response.status_code == 201, response.content
    back = response.json()
    assert (back["run"], back["rollback_of"], back["previous"], back["current"]) == (
        first.pk,
        b["id"],
        None,
        True,
    )
    entry = AuditEntry.objects.get(action="deployment.rollback")
    assert entry.comment == "back" and entry.after["restores"] == a["id"]

    stale = assert_error_shape(api.post(f"/deployments/{b['id']}/rollback", {}), 409)
    assert f"deployment {b['id']} is no longer the deployed policy" in stale["error"]
    assert assert_error_shape(api.post(f"/deployments/{back['id']}/rollback", {}), 409)["error"].startswith(
        f"deployment {back['id']} has no deployment before it"
    )
    assert_error_shape(api.post("/deployments/999999/rollback", {}), 404)

    # operators see the deployments; only engineers deploy and roll back
    listing = api_as(operator).get("/deployments").json()
    assert listing["count"] == 3 and [item["current"] for item in listing["items"]] == [True, False, False]
    assert_error_shape(api_as(operator).post(f"/deployments/{back['id']}/rollback", {}), 403)
    assert_error_shape(api_as(operator).post(f"/runs/{first.pk}/deploy", {"override_reason": OVERRIDE}), 403)


def test_deploy_refuses_unknown_keys(api_as, engineer, make_run):
    run = succeeded_run(make_run())
    body = assert_error_shape(
        api_as(engineer).post(f"/runs/{run.pk}/deploy", {"overide_reason": OVERRIDE}), 422
    )
    assert body["field"] == "overide_reason" and not Deployment.objects.exists()


def test_a_launch_needing_an_unconfigured_llm_server_is_refused(api_as, engineer, monkeypatch):
    monkeypatch.delenv("GRIDACE_LLM_BASE_URL", raising=False)
    api = api_as(engineer)
    body = assert_error_shape(api.post("/runs", {"config": {"llm": "openai", "steps": 300}}), 400)
    assert body["field"] == "config.llm"
    assert (
        "llm=openai needs an OpenAI-compatible server, and GRIDACE_LLM_BASE_URL is not set" in body["error"]
    )
    assert body["accepted"].startswith("set GRIDACE_LLM_BASE_URL")
    assert not TrainingRun.objects.exists()
