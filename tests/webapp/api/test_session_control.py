"""Starting and controlling live sessions over HTTP holds the console's rules: the start form's
checks (the day named when it does not exist), pause, single steps, speed and resume for operators
and engineers, stop for engineers only, alarms acknowledged once; each write audited by the
operations services as on the console, and by the API with the token."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.webapp.api.conftest import assert_error_shape
from tests.webapp.operations.conftest import ENV, SCENARIO, run_feed
from webapp.audit.models import AuditEntry
from webapp.operations import selectors
from webapp.operations.models import LiveSession, SessionStatus

pytestmark = pytest.mark.django_db


def test_an_engineer_starts_a_session_of_the_deployed_policy(api_as, engineer, deployment):
    response = api_as(engineer).post(
        "/sessions", {"label": "night shift", "scenario_index": SCENARIO, "k": 2, "speed_seconds": 0}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    session = LiveSession.objects.get(pk=body["id"])
    assert (body["label"], body["env"], body["status"], body["speed_seconds"]) == (
        "night shift",
        ENV,
        SessionStatus.RUNNING,
        0.0,
    )
    assert (session.k, session.seed, session.max_steps, session.deployment, session.created_by) == (
        2,
        0,
        0,
        deployment,
        engineer,
    )
    entry = AuditEntry.objects.get(action="live.session.start")
    assert (entry.actor, entry.target_id, entry.after["deployment"]) == (
        engineer,
        str(session.pk),
        deployment.pk,
    )
    request = AuditEntry.objects.get(action="api.request", actor=engineer)
    assert (request.after["method"], request.after["path"], request.after["status"]) == (
        "POST",
        "/api/v1/sessions",
        201,
    )


def test_a_start_is_refused_as_the_form_refuses_it(api_as, engineer, operator, deployment):
    api = api_as(engineer)
    days = len(selectors.scenario_names(ENV))
    missing = assert_error_shape(api.post("/sessions", {"scenario_index": 999}), 400)
    assert (missing["field"], missing["accepted"]) == ("scenario_index", f"0 to {days - 1}")
    assert missing["error"] == f"scenario 999 does not exist for {ENV}"
    late = assert_error_shape(api.post("/sessions", {"scenario_index": 0, "start_step": 288}), 400)
    assert (late["field"], late["accepted"]) == ("start_step", "0 to 286")
    assert late["error"] == f"{ENV}: start step 288 is outside scenario 0 (288 steps)"
    for body, field in (
        ({"scenario_index": 0, "k": 0}, "k"),
        ({"scenario_index": 0, "speed_seconds": 61}, "speed_seconds"),
        ({"scenario_index": 0, "seed": -1}, "seed"),
        ({"scenario_index": 0, "start_step": -1}, "start_step"),
        ({"scenario_index": "0"}, "scenario_index"),
        ({"scenario_index": 0, "label": "x" * 101}, "label"),
        ({}, "scenario_index"),
    ):
        assert assert_error_shape(api.post("/sessions", body), 422)["field"] == field, body
    unknown = assert_error_shape(api.post("/sessions", {"scenario_index": 0, "speeed_seconds": 1}), 422)
    assert unknown["field"] == "speeed_seconds" and "only the keys the API documents" in unknown["accepted"]
    # operators run sessions but do not start them, as on the pages
    refused = assert_error_shape(api_as(operator).post("/sessions", {"scenario_index": 0}), 403)
    assert refused["accepted"] == "a token of a user with the role engineer"
    assert (
        not LiveSession.objects.exists()
        and not AuditEntry.objects.filter(action="live.session.start").exists()
    )


def test_no_session_starts_without_a_deployed_policy(api_as, engineer):
    body = assert_error_shape(api_as(engineer).post("/sessions", {"scenario_index": 0}), 409)
    assert body["error"] == "no policy is deployed; an engineer must deploy a checkpoint first"
    assert not LiveSession.objects.exists()


def test_pause_step_speed_resume_and_stop_as_on_the_console(api_as, operator, engineer, make_session):
    session = make_session(max_steps=20)
    api = api_as(operator)
    # a single step of a running session: pause first
    running = assert_error_shape(api.post(f"/sessions/{session.pk}/step"), 409)
    assert running["error"] == "single steps are for paused sessions; pause the session first"

    paused = api.post(f"/sessions/{session.pk}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == SessionStatus.PAUSED
    assert api.post(f"/sessions/{session.pk}/step").status_code == 200
    run_feed(session, 1)  # the reset and the one step asked for, then it waits, paused
    session.refresh_from_db()
    assert (session.status, session.current_step, session.steps_requested) == (SessionStatus.PAUSED, 1, 0)

    faster = api.post(f"/sessions/{session.pk}/speed", {"speed_seconds": 0.5})
    assert faster.status_code == 200 and faster.json()["speed_seconds"] == 0.5
    too_slow = assert_error_shape(api.post(f"/sessions/{session.pk}/speed", {"speed_seconds": 61}), 422)
    assert (too_slow["field"], too_slow["accepted"]) == ("speed_seconds", "<= 60.0")
    assert (
        assert_error_shape(api.post(f"/sessions/{session.pk}/speed", {"speed": 1}), 422)["field"] == "speed"
    )
    resumed = api.post(f"/sessions/{session.pk}/resume")
    assert resumed.status_code == 200 and resumed.json()["status"] == SessionStatus.RUNNING

    # operators pause; only engineers stop
    refused = assert_error_shape(api.post(f"/sessions/{session.pk}/stop"), 403)
    assert refused["accepted"] == "a token of a user with the role engineer"
    stopped = api_as(engineer).post(f"/sessions/{session.pk}/stop")
    assert stopped.status_code == 200, stopped.content
    assert (stopped.json()["status"], stopped.json()["end_reason"]) == (
        SessionStatus.STOPPED,
        f"stopped by {engineer.username}",
    )
    ended = assert_error_shape(api.post(f"/sessions/{session.pk}/pause"), 409)
    assert ended["error"] == f"session {session.pk} is stopped; only running or paused sessions obey"

    actions = list(
        AuditEntry.objects.filter(action__startswith="live.session.")
        .order_by("id")
        .values_list("action", "actor__username")
    )
    assert actions == [
        ("live.session.start", engineer.username),
        ("live.session.pause", operator.username),
        ("live.session.step", operator.username),
        ("live.session.speed", operator.username),
        ("live.session.resume", operator.username),
        ("live.session.stop", engineer.username),
    ]
    speed = AuditEntry.objects.get(action="live.session.speed")
    assert (speed.before["speed_seconds"], speed.after["speed_seconds"]) == (0.0, 0.5)
    assert AuditEntry.objects.filter(action="api.request").count() == 5  # the controls carried out


def test_control_of_an_unknown_session_is_not_found(api_as, operator, reviewer, make_session):
    session = make_session()
    for command in ("pause", "resume", "step"):
        assert (
            "no live session 999999"
            in assert_error_shape(api_as(operator).post(f"/sessions/999999/{command}"), 404)["error"]
        )
    assert_error_shape(api_as(operator).post("/sessions/999999/speed", {"speed_seconds": 1.0}), 404)
    # reviewers neither watch nor control sessions
    assert_error_shape(api_as(reviewer).post(f"/sessions/{session.pk}/pause"), 403)
    assert LiveSession.objects.get(pk=session.pk).status == SessionStatus.RUNNING


def test_an_alarm_is_acknowledged_once(api_as, operator, engineer, make_session):
    session = make_session()
    other = make_session()
    alarm = session.alarms.create(
        step=1, kind="overload", line=3, message="line 3 overloaded (rho 1.02)", raised_at=timezone.now()
    )
    url = f"/sessions/{session.pk}/alarms/{alarm.pk}/acknowledge"
    # engineers watch sessions; operators acknowledge their alarms
    refused = assert_error_shape(api_as(engineer).post(url), 403)
    assert refused["accepted"] == "a token of a user with the role operator"
    api = api_as(operator)
    response = api.post(url)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["line"], body["acknowledged_by"]) == (alarm.pk, 3, operator.username)
    assert body["acknowledged_at"] is not None
    again = assert_error_shape(api.post(url), 409)
    assert again["error"] == f"alarm {alarm.pk} was already acknowledged by {operator.username}"
    elsewhere = assert_error_shape(api.post(f"/sessions/{other.pk}/alarms/{alarm.pk}/acknowledge"), 404)
    assert elsewhere["error"] == f"alarm {alarm.pk} is not one of session {other.pk}'s"
    assert_error_shape(api.post(f"/sessions/999999/alarms/{alarm.pk}/acknowledge"), 404)
    entry = AuditEntry.objects.get(action="live.alarm.acknowledge")
    assert (entry.actor, entry.target_id, entry.after) == (
        operator,
        str(alarm.pk),
        {"session": session.pk, "step": 1},
    )


def test_a_new_session_from_a_recorded_step(api_as, engineer, operator, make_session):
    session = make_session(max_steps=20)
    run_feed(session, 2)
    api = api_as(engineer)
    response = api.post(f"/sessions/{session.pk}/fork", {"step": 2, "label": "over again"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["label"], body["scenario"]) == (
        "paused",
        "over again",
        session.scenario_name,
    )
    late = assert_error_shape(api.post(f"/sessions/{session.pk}/fork", {"step": 7}), 400)
    assert (late["field"], late["accepted"]) == ("step", "0 to 2")
    assert assert_error_shape(api.post(f"/sessions/{session.pk}/fork", {"step": -1}), 422)["field"] == "step"
    refused = assert_error_shape(api_as(operator).post(f"/sessions/{session.pk}/fork", {"step": 1}), 403)
    assert refused["accepted"] == "a token of a user with the role engineer"
    assert LiveSession.objects.count() == 2
