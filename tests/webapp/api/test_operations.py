"""The live endpoints on a session fed by the real feed worker: the state is the console's
snapshot, the recommendations carry their simulation, accepting through the API is the same
decision as on the console (audited, one action per step), the what-if simulates."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import assert_error_shape
from tests.webapp.operations.conftest import run_feed
from webapp.accounts.models import SecurityEvent
from webapp.api.schemas.recommendations import RecommendationOut
from webapp.audit.models import AuditEntry
from webapp.operations import selectors
from webapp.operations.models import Decision, DecisionKind, DecisionStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def fed_session(make_session):
    session = make_session()
    run_feed(session, 3)
    session.refresh_from_db()
    return session


def test_state_is_the_consoles_snapshot(api_as, operator, fed_session):
    api = api_as(operator)
    body = api.get(f"/sessions/{fed_session.pk}/state").json()
    snapshot, cursor = selectors.snapshot(session_id=fed_session.pk)
    assert body["cursor"] == cursor == fed_session.current_step
    assert body["session"] == snapshot["session"] and body["timeline"] == snapshot["timeline"]
    assert body["state"]["max_rho"] == pytest.approx(snapshot["state"]["max_rho"])
    assert [r["id"] for r in body["recommendations"]] == [r["id"] for r in snapshot["recommendations"]]

    listing = api.get("/sessions", status="running").json()
    assert listing["count"] == 1 and listing["items"][0]["id"] == fed_session.pk
    assert api.get("/sessions", status="finished").json()["count"] == 0
    assert "no live session" in assert_error_shape(api.get("/sessions/999999/state"), 404)["error"]


def test_accepting_the_top_recommendation_is_the_consoles_decision(api_as, operator, fed_session):
    api = api_as(operator)
    recs = api.get(f"/sessions/{fed_session.pk}/recommendations").json()
    assert recs["step"] == fed_session.current_step and recs["decisions_open"]
    top = recs["items"][0]
    assert top["rank"] == 0 and top["max_rho_before"] > 0 and "lines_relieved" in top
    url = f"/sessions/{fed_session.pk}/recommendations/{top['id']}/decision"

    # a step the card was never shown at (it lasts from its first step to the current one)
    stale = assert_error_shape(api.post(url, {"decision": "accept", "step": recs["step"] + 1}), 400)
    assert f"was shown from step {top['first_step']} to {recs['step']}, not at step" in stale["error"]
    accepted = api.post(url, {"decision": "accept", "step": recs["step"], "comment": "via the EMS"})
    assert accepted.status_code == 200, accepted.content
    decision = Decision.objects.get(pk=accepted.json()["id"])
    assert (decision.kind, decision.status, decision.decided_by) == (
        DecisionKind.ACCEPT,
        DecisionStatus.PENDING,
        operator,
    )
    # audited as on the console, plus the API request with the token that made it
    assert AuditEntry.objects.filter(action="live.recommendation.accept", actor=operator).count() == 1
    request = AuditEntry.objects.filter(action="api.request", actor=operator).order_by("id").last()
    assert request.after["status"] == 200 and request.after["path"].endswith("/decision")

    assert top["figures"]["n1"]["screened"] == 20 and top["figures"]["look_ahead"]["max_rho"]
    second = recs["items"][-1]  # another card when there are several; one action per step either way
    conflict = api.post(
        f"/sessions/{fed_session.pk}/recommendations/{second['id']}/decision",
        {"decision": "accept", "step": recs["step"]},
    )
    assert "one action per step" in assert_error_shape(conflict, 409)["error"]

    # the feed worker plays it at the next step
    run_feed(fed_session, 1)
    decision.refresh_from_db()
    assert decision.status in (DecisionStatus.APPLIED, DecisionStatus.REFUSED)


def test_what_if_simulates_and_refuses_bad_actions(api_as, operator, engineer, fed_session):
    api = api_as(operator)
    step = fed_session.current_step
    outcome = api.post(f"/sessions/{fed_session.pk}/what-if", {"step": step, "action": {"kind": "nothing"}})
    assert outcome.status_code == 200, outcome.content
    body = outcome.json()
    assert body["legal"] and body["step"] == step and not body["stale"]
    assert body["figures"]["n1"]["screened"] == 20 and body["figures"]["look_ahead"]["max_rho"]
    assert len(body["rho_after"]) > 0 and body["max_rho_after"] == pytest.approx(
        max(body["rho_after"]), abs=1e-3
    )

    bad = api.post(f"/sessions/{fed_session.pk}/what-if", {"step": step, "action": {"kind": "teleport"}})
    refusal = assert_error_shape(bad, 400)
    assert "unknown action kind" in refusal["error"] and "nothing" in refusal["accepted"]
    missing = assert_error_shape(api.post(f"/sessions/{fed_session.pk}/what-if", {"step": step}), 422)
    assert missing["field"] == "action"

    # engineers watch sessions but do not operate them
    refused = assert_error_shape(
        api_as(engineer).post(
            f"/sessions/{fed_session.pk}/what-if", {"step": step, "action": {"kind": "nothing"}}
        ),
        403,
    )
    assert refused["accepted"] == "a token of a user with the role operator"
    attempt = SecurityEvent.objects.get(username=engineer.username)  # refusals: the security log
    assert (attempt.status, attempt.method, attempt.kind) == (403, "POST", "api.refused")
    assert not AuditEntry.objects.filter(action="api.request", actor=engineer).exists()


def test_what_if_plays_a_continuous_move_and_returns_its_cost(api_as, operator, fed_session):
    api = api_as(operator)
    url, step = f"/sessions/{fed_session.pk}/what-if", fed_session.current_step
    move = {"redispatch": [[0, 2.0]]}
    outcome = api.post(url, {"step": step, "action": {"kind": "nothing", "move": move}})
    assert outcome.status_code == 200, outcome.content
    body = outcome.json()
    assert body["legal"] and body["action"] == {"kind": "nothing", "move": move}
    assert body["description"].startswith("redispatch ") and "+2.0 MW" in body["description"]
    assert body["move"] == body["figures"]["move"] == move
    assert body["cost"] == body["figures"]["cost"] and body["cost"]["redispatched_mw"] >= 2.0
    assert body["cost"]["euros_per_hour"] > 0
    # topology alone: no move, no cost
    plain = api.post(url, {"step": step, "action": {"kind": "nothing"}}).json()
    assert plain["move"] is None and plain["cost"] is None

    # past a limit: refused with the limit named, nothing simulated
    past = api.post(url, {"step": step, "action": {"kind": "nothing", "move": {"redispatch": [[0, 50.0]]}}})
    assert past.status_code == 200 and not past.json()["legal"]
    assert "past its ramp" in past.json()["refusal"] and past.json()["max_rho_after"] is None
    # malformed: refused with what is accepted
    bad = api.post(url, {"step": step, "action": {"kind": "nothing", "move": {"boost": [[0, 1.0]]}}})
    assert "unknown part(s) boost" in assert_error_shape(bad, 400)["error"]


def test_a_cards_move_and_cost_are_returned_beside_its_figures():
    card = {"figures": {"move": {"curtail": [[2, 10.0]]}, "cost": {"mw": 5.0, "euros_per_hour": 300.0}}}
    assert RecommendationOut.resolve_move(card) == {"curtail": [[2, 10.0]]}
    assert RecommendationOut.resolve_cost(card)["euros_per_hour"] == 300.0
    assert RecommendationOut.resolve_move({"figures": {}}) is None
