"""The feed worker's steps and recommendations, operators' decisions applied at the next step and
audited, refusals (stale step, unknown names, illegal actions), and resuming after a restart."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from ace_core.live import LiveGrid, parse_action
from tests.webapp.operations.conftest import ENV, SCENARIO, run_feed
from webapp.audit.models import AuditEntry
from webapp.operations import mirror
from webapp.operations.errors import DecisionConflictError, OperationsError, StaleStepError
from webapp.operations.models import (
    Alarm,
    Decision,
    DecisionStatus,
    LiveRecommendation,
    LiveSession,
    RecommendationStatus,
    SessionStep,
)
from webapp.operations.services import (
    action_apply,
    alarm_acknowledge,
    recommendation_decide,
    session_control,
    session_start,
    sessions_claim,
)

pytestmark = pytest.mark.django_db


def test_each_step_is_recorded_with_simulated_recommendations(make_session):
    session = make_session()
    feed = run_feed(session, 3)
    session.refresh_from_db()
    assert session.current_step == 3 and session.decisions_open and session.layout["env"] == ENV
    assert list(SessionStep.objects.filter(session=session).values_list("step", flat=True)) == [0, 1, 2, 3]
    recs = LiveRecommendation.objects.filter(session=session, step=3).order_by("rank")
    assert len(recs) >= 1 and all(r.source in ("policy", "expert", "both", "default") for r in recs)
    row = SessionStep.objects.get(session=session, step=3)
    reference = row.assessment["reference"]
    assert reference["description"] == "do nothing" and reference["n1"]["screened"] == 20
    for rec in recs:  # never worse than doing nothing, and each card carries its N-1 and look-ahead
        assert rec.max_rho_after is not None and not rec.error
        assert rec.max_rho_after <= reference["max_rho_after"] + 1e-4  # rounded to 1e-4 on the card
        assert len(rec.figures["overloads_after"]) <= len(reference["overloads_after"])
        assert rec.figures["n1"]["worst"]["outage_name"] and rec.figures["n1"]["screened"] == 20
        assert 0 < len(rec.figures["look_ahead"]["max_rho"]) <= 12 and rec.figures["substations"]
    rejected = row.assessment["rejected"]
    assert rejected and all(r["rejected_because"] for r in rejected)
    assert not {r["action_index"] for r in rejected} & {
        r.action["index"] for r in recs if "index" in r.action
    }
    security = row.assessment["security"]
    assert security["n1"]["status"] and security["look_ahead"]["forecast"]["kind"] == "perfect"
    assert row.assessment["forecast"]["horizon_minutes"] == 60
    # the grid is not N-1 secure from the start: that is its baseline, shown with every step, not
    # an alarm; an alarm fires only when N-1 gets worse than it
    baseline = row.assessment["n1_baseline"]
    assert (
        baseline["step"] == 0
        and baseline["n_overloading"]
        == SessionStep.objects.get(session=session, step=0).assessment["security"]["n1"]["n_overloading"]
    )
    assert not security["n1"]["secure"] and baseline["n_overloading"] > 0
    for alarm in Alarm.objects.filter(session=session, kind="n1_insecure"):
        assert (
            alarm.message.startswith("N-1 worse than at the session's start") and alarm.severity == "warning"
        )
    assert (
        LiveRecommendation.objects.filter(session=session, step=2, status=RecommendationStatus.OPEN).count()
        == 0
    )
    assert len(feed.recommend_ms) == 4 and all(ms > 0 for ms in feed.recommend_ms)
    row = SessionStep.objects.get(session=session, step=3)
    assert row.state["step"] == 3 and len(row.state["rho"]) == len(session.layout["lines"])
    assert row.recommend_ms > 0 and row.text.startswith("Step ")


def test_an_accepted_recommendation_is_played_at_the_next_step_and_audited(make_session, operator):
    session = make_session()
    run_feed(session, 1)
    rec = LiveRecommendation.objects.filter(session=session, step=1, error="").order_by("rank").first()
    decision = recommendation_decide(
        session_id=session.pk, recommendation_id=rec.pk, user=operator, step=1, decision="accept"
    )
    assert decision.status == DecisionStatus.PENDING
    run_feed(session, 1)
    session.refresh_from_db()
    decision.refresh_from_db()
    assert decision.status == DecisionStatus.APPLIED and decision.applied_step == 2
    row = SessionStep.objects.get(session=session, step=2)
    assert row.applied_action == rec.action
    assert decision.outcome["max_rho"] == row.state["max_rho"]
    if rec.action["kind"] == "topology":  # the grid really changed: the buses are the action's
        start = next(s["start"] for s in session.layout["substations"] if s["id"] == rec.action["substation"])
        assert [row.state["bus"][start + e] for e, _ in rec.action["set"]] == [
            b for _, b in rec.action["set"]
        ]
    accepted = AuditEntry.objects.get(action="live.recommendation.accept")
    assert accepted.actor == operator
    assert accepted.after["session"] == session.pk and accepted.after["step"] == 1
    assert accepted.after["recommendation"] == rec.pk and accepted.after["decision"] == "accept"
    # the figures the operator saw are kept with the decision and in its audit entry
    seen = decision.figures_seen
    assert accepted.after["figures_seen"] == seen
    assert seen["action"]["max_rho_after"] == rec.max_rho_after
    assert seen["action"]["n1"]["worst_outage"] == rec.figures["n1"]["worst"]["outage_name"]
    assert seen["action"]["look_ahead"]["max_rho"] == rec.figures["look_ahead"]["max_rho"]
    assessment = SessionStep.objects.get(session=session, step=1).assessment
    assert seen["grid"]["n1"]["status"] == assessment["security"]["n1"]["status"]
    assert (
        seen["grid"]["forecast"] == "perfect" and seen["grid"]["alarms"] == assessment["security"]["alarms"]
    )
    assert seen["grid"]["do_nothing_max_rho_after"] == assessment["reference"]["max_rho_after"]
    outcome = AuditEntry.objects.get(action="live.decision.outcome")
    assert outcome.actor is None and outcome.target_id == str(decision.pk)
    assert outcome.after["step"] == 2 and outcome.after["max_rho"] == row.state["max_rho"]


def test_decisions_on_a_stale_step_or_twice_are_refused(make_session, operator, make_user):
    session = make_session()
    run_feed(session, 2)
    current = list(
        LiveRecommendation.objects.filter(session=session, step=2, status=RecommendationStatus.OPEN, error="")
    )
    first = current[0].first_step
    with pytest.raises(StaleStepError, match=f"was shown from step {first} to 2, not at step 5"):
        recommendation_decide(
            session_id=session.pk, recommendation_id=current[0].pk, user=operator, step=5, decision="accept"
        )
    recommendation_decide(
        session_id=session.pk, recommendation_id=current[0].pk, user=operator, step=2, decision="accept"
    )
    other = make_user("operator")
    with pytest.raises(DecisionConflictError, match="step 2 already has an action"):
        recommendation_decide(
            session_id=session.pk, recommendation_id=current[0].pk, user=other, step=2, decision="accept"
        )
    with pytest.raises(DecisionConflictError, match="already accepted"):
        recommendation_decide(
            session_id=session.pk, recommendation_id=current[0].pk, user=other, step=2, decision="reject"
        )
    with pytest.raises(OperationsError, match="unknown decision 'maybe'; accepted: accept, reject"):
        recommendation_decide(
            session_id=session.pk, recommendation_id=current[0].pk, user=other, step=2, decision="maybe"
        )
    with pytest.raises(OperationsError, match="recommendation 999999 is not one of session"):
        recommendation_decide(
            session_id=session.pk, recommendation_id=999999, user=other, step=2, decision="reject"
        )
    assert Decision.objects.filter(session=session).count() == 1  # nothing half-written


def test_what_if_matches_grid2op_and_refuses_bad_actions(make_session, operator):
    session = make_session()
    run_feed(session, 2)
    session.refresh_from_db()
    # the mirror's state is the worker's
    grid = LiveGrid(ENV, SCENARIO, 0, None)
    grid.replay([{}, {}])
    action = {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}
    outcome = mirror.what_if(session=session, step=2, action=action)
    sim_obs, *_ = grid.obs.simulate(
        grid.env.action_space({"set_bus": {"substations_id": [(1, [0, 0, 2, 2, 0, 0])]}})
    )
    assert outcome["legal"] and np.isclose(outcome["max_rho_after"], sim_obs.rho.max(), atol=1e-3)
    figures = outcome["figures"]  # the same N-1 and look-ahead figures as the cards carry
    assert figures["n1"]["screened"] == 20 and figures["n1"]["worst"]["worst_line_name"]
    assert 0 < len(figures["look_ahead"]["max_rho"]) <= 12 and "max rho" in figures["outcome"]
    assert outcome["max_rho_before"] == SessionStep.objects.get(session=session, step=2).state["max_rho"]

    bad = {
        "unknown substation 99; this grid has substations 0 to 13": {
            "kind": "topology",
            "substation": 99,
            "set": [[0, 2]],
        },
        "substation 1 has no element 9; accepted: 0 to 5": {
            "kind": "topology",
            "substation": 1,
            "set": [[9, 2]],
        },
        "bus 3 is not accepted; accepted: 1 or 2": {"kind": "topology", "substation": 1, "set": [[0, 3]]},
        "unknown line 77; this grid has lines 0 to 19": {"kind": "line", "line": 77, "status": "connect"},
        "unknown action kind 'teleport'": {"kind": "teleport"},
    }
    for message, spec in bad.items():
        with pytest.raises(OperationsError, match=message):
            mirror.what_if(session=session, step=2, action=spec)
    islanding = mirror.what_if(
        session=session, step=2, action={"kind": "topology", "substation": 1, "set": [[5, 2]]}
    )
    assert not islanding["legal"], islanding
    assert "would island load 0 on bus 2 of substation 1" in islanding["refusal"]
    already = mirror.what_if(session=session, step=2, action={"kind": "line", "line": 3, "status": "connect"})
    assert already["refusal"] == "line 1-3 is already connected"

    # an illegal action is refused with the reason; a legal one is played at the next step
    with pytest.raises(OperationsError, match="this action cannot be played: would island load 0"):
        action_apply(
            session_id=session.pk,
            user=operator,
            step=2,
            action={"kind": "topology", "substation": 1, "set": [[5, 2]]},
        )
    applied = action_apply(session_id=session.pk, user=operator, step=2, action=action)
    assert applied.figures_seen["action"]["n1"]["worst_outage"] == figures["n1"]["worst"]["outage_name"]
    assert AuditEntry.objects.get(action="live.action.apply").after["figures_seen"] == applied.figures_seen
    run_feed(session, 1)
    assert SessionStep.objects.get(session=session, step=3).state["bus"] == grid_after(action)


def grid_after(action):
    grid = LiveGrid(ENV, SCENARIO, 0, None)
    grid.replay([{}, {}, action])
    return grid.state["bus"]


def test_a_restarted_worker_resumes_from_the_last_recorded_step(make_session, settings):
    session = make_session()
    run_feed(session, 3, token="worker-a")
    # worker a dies: its heartbeat ages; worker b takes the session over and replays
    LiveSession.objects.filter(pk=session.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert sessions_claim(worker_token="worker-b") == [session.pk]
    run_feed(session, 2, token="worker-b")
    session.refresh_from_db()
    assert session.current_step == 5 and session.resumes == 1 and session.worker_token == "worker-b"
    states = [row.state for row in SessionStep.objects.filter(session=session).order_by("step")]
    grid = LiveGrid(ENV, SCENARIO, 0, None)
    expected = [grid.reset().state] + [
        grid.step(parse_action({"kind": "nothing"}, grid.space)).state for _ in range(5)
    ]
    assert states == expected
    # worker a, back from the dead, no longer owns it and stops without writing
    run_feed(session, 1, token="worker-a")
    assert SessionStep.objects.filter(session=session).count() == 6


def test_pause_single_step_stop_and_alarm_acknowledgement(make_session, operator, engineer):
    session = make_session(max_steps=4)
    session_control(session_id=session.pk, user=operator, command="pause")
    with pytest.raises(OperationsError, match="speed=99.0 s is out of range; accepted: 0.0 to 60.0"):
        session_control(session_id=session.pk, user=operator, command="speed", speed_seconds=99.0)
    session_control(session_id=session.pk, user=operator, command="step")
    run_feed(session, 1)  # step 0 (the reset) and one requested step, then waits paused
    session.refresh_from_db()
    assert session.current_step == 1 and session.steps_requested == 0
    session_control(session_id=session.pk, user=operator, command="resume")
    run_feed(session, 10)  # the scenario is cut to 4 steps: it finishes
    session.refresh_from_db()
    assert (
        session.status == "finished"
        and session.end_reason == "scenario finished"
        and session.current_step == 4
    )
    with pytest.raises(OperationsError, match="session .* is finished; only running or paused sessions obey"):
        session_control(session_id=session.pk, user=engineer, command="stop")
    alarm = session.alarms.create(
        step=1, kind="overload", line=3, message="line 3 overloaded (rho 1.02)", raised_at=timezone.now()
    )
    alarm_acknowledge(session_id=session.pk, alarm_id=alarm.pk, user=operator)
    with pytest.raises(DecisionConflictError, match="already acknowledged by"):
        alarm_acknowledge(session_id=session.pk, alarm_id=alarm.pk, user=operator)
    assert AuditEntry.objects.filter(action="live.alarm.acknowledge", actor=operator).count() == 1


def test_a_session_needs_a_deployed_policy_and_valid_settings(engineer, deployment):
    with pytest.raises(
        OperationsError, match="scenario 999 does not exist for l2rpn_case14_sandbox; accepted: 0 to"
    ):
        session_start(user=engineer, scenario_index=999)
    with pytest.raises(OperationsError, match="k=0 is out of range; accepted: 1 to 10"):
        session_start(user=engineer, scenario_index=0, k=0)
    with pytest.raises(
        OperationsError, match=r"start step 288 is outside scenario 0 \(288 steps\); accepted: 0 to 286"
    ) as refused:
        session_start(user=engineer, scenario_index=0, start_step=288)
    assert refused.value.field == "start_step"
    assert LiveSession.objects.count() == 0


def test_no_session_without_a_deployed_policy(engineer):
    with pytest.raises(OperationsError, match="no policy is deployed"):
        session_start(user=engineer, scenario_index=0)


def test_a_card_lasts_while_its_situation_does_and_expires_with_the_reason(make_session, operator):
    session = make_session()
    run_feed(session, 1)
    at_1 = list(LiveRecommendation.objects.filter(session=session, step=1))
    seen_at_1 = {r.pk: r.description for r in at_1}
    first_steps = {r.pk: r.first_step for r in at_1}
    run_feed(session, 3)
    # the same cards, re-simulated at each step: their ids and first step kept, their figures new
    cards = list(LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN))
    assert {r.pk: r.description for r in cards} == seen_at_1
    assert all(r.step == 4 and r.first_step == first_steps[r.pk] <= 1 for r in cards)
    assert min(first_steps.values()) == 0
    assert LiveRecommendation.objects.filter(session=session).count() == len(cards)
    # the operator saw the card at step 1: the decision is taken on step 4 with step 4's figures
    rec = next(r for r in cards if not r.error)
    decision = recommendation_decide(
        session_id=session.pk, recommendation_id=rec.pk, user=operator, step=1, decision="accept"
    )
    assert decision.step == 4 and decision.figures_seen["shown_since_step"] == rec.first_step
    assert decision.figures_seen["action"]["max_rho_after"] == rec.max_rho_after
    assert decision.figures_seen["action"]["rank_reason"] == rec.figures["rank_reason"]
    run_feed(session, 1)
    decision.refresh_from_db()
    assert decision.status == DecisionStatus.APPLIED and decision.applied_step == 5
    # ending the session expires the cards still open, with the reason; none can be decided on
    session_control(session_id=session.pk, user=operator, command="stop")
    expired = list(LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.EXPIRED))
    assert expired and all(r.expired_because for r in expired)
    assert not LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN).exists()
    with pytest.raises(OperationsError):
        recommendation_decide(
            session_id=session.pk, recommendation_id=expired[0].pk, user=operator, step=5, decision="accept"
        )


def test_a_card_that_leaves_the_cards_expires_with_why_and_cannot_be_accepted(make_session, operator):
    session = make_session()
    run_feed(session, 2)
    cards = list(LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN))
    accepted, *others = [r for r in cards if not r.error]
    recommendation_decide(
        session_id=session.pk, recommendation_id=accepted.pk, user=operator, step=2, decision="accept"
    )
    run_feed(session, 3)  # the grid changed: cards for the old grid leave or stay, each for a reason
    for rec in LiveRecommendation.objects.filter(pk__in=[r.pk for r in others]):
        if rec.status == RecommendationStatus.EXPIRED:
            assert rec.expired_because and rec.step < 5
            with pytest.raises(StaleStepError, match=f"recommendation {rec.pk} expired at step {rec.step}: "):
                recommendation_decide(
                    session_id=session.pk,
                    recommendation_id=rec.pk,
                    user=operator,
                    step=rec.step,
                    decision="accept",
                )
        else:
            assert rec.status == RecommendationStatus.OPEN and rec.step == 5
