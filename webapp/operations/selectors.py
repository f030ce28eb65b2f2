"""Reading live sessions: lists, the console's snapshot and panels, replays, applied actions."""

from __future__ import annotations

import statistics
from collections import Counter
from functools import cache
from typing import Any

from django.db.models import QuerySet

from webapp.live import session_messages
from webapp.operations.models import (
    Alarm,
    AlarmSeverity,
    Decision,
    DecisionKind,
    DecisionStatus,
    LiveRecommendation,
    LiveSession,
    RecommendationStatus,
    SessionStep,
)

RECENT_ALARMS = 30
RECENT_DECISIONS = 15


def session_list() -> QuerySet[LiveSession]:
    return LiveSession.objects.select_related("created_by", "deployment__checkpoint")


def session_get(*, pk: int) -> LiveSession | None:
    return session_list().filter(pk=pk).first()


@cache
def _live_days(env_name: str) -> tuple[Any, ...]:
    """The days of ``env_name`` without their difficulty (opens the env once per process: 1-3 s)."""
    from ace_core.grid.envs import make_env
    from ace_core.live.days import live_days

    return tuple(live_days(make_env(env_name)))


def scenario_names(env_name: str) -> tuple[str, ...]:
    """Names of the scenarios a session of ``env_name`` can play, by index."""
    return tuple(day.scenario.name for day in _live_days(env_name))


def session_scenario(env_name: str, scenario_index: int, *, start_step: int = 0, max_steps: int = 0) -> Any:
    """The part of day ``scenario_index`` a session plays (:func:`ace_core.live.session_scenario`:
    refused with a :class:`~ace_core.live.LiveActionError` naming what is accepted)."""
    from ace_core.live import session_scenario

    days = _live_days(env_name)
    return session_scenario(
        [day.scenario for day in days], scenario_index, start_step=start_step, max_steps=max_steps
    )


def session_days(env_name: str) -> list[Any]:
    """The days a session of ``env_name`` can play, by index (:class:`ace_core.live.days.Day`):
    date, season, split, and doing nothing's survival where ``manage.py day_difficulty`` has
    played it (read from its cache file at each call; never played here)."""
    from ace_core.live.days import DifficultyCache

    return DifficultyCache(env_name).days(list(_live_days(env_name)))


def first_test_scenario(env_name: str) -> int:
    """The index of the env's first test-split scenario (``scenarios(env, 'test')[0]``) among
    those a session can play: a day that no policy trained on; 0 when the env has no test day."""
    from ace_core.grid.scenarios import split_of

    names = scenario_names(env_name)
    return next((i for i in range(len(names)) if split_of(i, len(names)) == "test"), 0)


def applied_actions(*, session_id: int, after: int = 0, upto: int | None = None) -> list[dict[str, Any]]:
    """The actions played to reach steps ``after + 1 .. upto`` (all recorded steps by default)."""
    rows = SessionStep.objects.filter(session_id=session_id, step__gt=after)
    if upto is not None:
        rows = rows.filter(step__lte=upto)
    return list(rows.order_by("step").values_list("applied_action", flat=True))


def open_recommendations(*, session: LiveSession) -> list[LiveRecommendation]:
    return list(
        LiveRecommendation.objects.filter(session=session, step=session.current_step).order_by("rank")
    )


def current_assessment(*, session: LiveSession) -> dict[str, Any]:
    """The current step's assessment: doing nothing's outcome, the rejected candidates, the grid's
    N-1 status and look-ahead, the forecast used (empty before the first step)."""
    found = (
        SessionStep.objects.filter(session=session, step=session.current_step)
        .values_list("assessment", flat=True)
        .first()
    )
    return found or {}


def first_assessment(*, session: LiveSession) -> dict[str, Any]:
    """The first recorded step's assessment (its N-1 is the session's baseline; empty if none)."""
    found = (
        SessionStep.objects.filter(session=session, assessment__has_key="security")
        .order_by("step")
        .values_list("assessment", flat=True)
        .first()
    )
    return found or {}


def panel(*, session: LiveSession) -> dict[str, Any]:
    """What the console's side panels show: the session, the current step's recommendations and
    assessment, alarms (all unacknowledged, plus the recent ones), the recent decisions."""
    unacked = list(
        Alarm.objects.filter(session=session, acknowledged_at__isnull=True).select_related("acknowledged_by")
    )
    recent = list(Alarm.objects.filter(session=session).select_related("acknowledged_by")[:RECENT_ALARMS])
    alarms = {a.pk: a for a in [*unacked, *recent]}
    decisions = Decision.objects.filter(session=session).select_related("decided_by")[:RECENT_DECISIONS]
    return {
        "kind": "panel",
        "session": session_messages.session_dict(session),
        "recommendations": [
            session_messages.recommendation_dict(r) for r in open_recommendations(session=session)
        ],
        "assessment": current_assessment(session=session),
        "alarms": [
            session_messages.alarm_dict(a) for a in sorted(alarms.values(), key=lambda a: (-a.step, -a.pk))
        ],
        "decisions": [session_messages.decision_dict(d) for d in decisions],
    }


def snapshot(*, session_id: int) -> tuple[dict[str, Any], int] | None:
    """The console's first message and the step it is at (the cursor for polling)."""
    session = LiveSession.objects.filter(pk=session_id).first()
    if session is None:
        return None
    last = SessionStep.objects.filter(session=session).order_by("-step").first()
    timeline = list(
        SessionStep.objects.filter(session=session)
        .order_by("step")
        .values_list("step", "max_rho", "overloads")
    )
    message = {
        **panel(session=session),
        "kind": "snapshot",
        "layout": session.layout,
        "state": last.state if last else None,
        "timeline": {
            "step": [t[0] for t in timeline],
            "max_rho": [t[1] for t in timeline],
            "overloads": [t[2] for t in timeline],
        },
    }
    return message, (last.step if last else -1)


def steps_since(*, session_id: int, cursor: int, revision: int) -> tuple[list[dict[str, Any]], int, int]:
    """For pages without a channel layer between the worker and them: step messages after
    ``cursor`` (the first with its cards and assessment whole, the next ones with what changed) and
    a panel when the session changed otherwise. Returns (messages, cursor, revision)."""
    session = LiveSession.objects.filter(pk=session_id).first()
    if session is None:
        return [], cursor, revision
    out = []
    rows = list(SessionStep.objects.filter(session=session, step__gt=cursor).order_by("step"))
    if rows:
        before = SessionStep.objects.filter(session=session, step=cursor).first()
        previous = before.state if before else None
        changes = session_messages.StepChanges()
        for row in rows:
            recs = list(LiveRecommendation.objects.filter(session=session, step=row.step).order_by("rank"))
            alarms = list(Alarm.objects.filter(session=session, step=row.step))
            applied = Decision.objects.filter(session=session, applied_step=row.step).first()
            message = session_messages.step_message(
                session=session,
                row=row,
                previous_state=previous,
                recommendations=recs,
                alarms=alarms,
                applied=applied,
            )
            out.append(changes.compact(message))
            previous = row.state
        cursor = rows[-1].step
    if session.revision != revision:
        out.append(panel(session=session))
    return out, cursor, session.revision


def replay_frames(*, session: LiveSession) -> list[dict[str, Any]]:
    """Every recorded state of a session, with the action played to reach it, for the replay
    page's time slider."""
    rows = SessionStep.objects.filter(session=session).order_by("step").values_list("state", "applied_action")
    return [{**state, "applied": applied} for state, applied in rows]


def _spread(values: list[float]) -> dict[str, float | None]:
    """Median, p90 and max of ``values`` (None when empty)."""
    if not values:
        return {"median": None, "p90": None, "max": None}
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
    }


def shift_summary(*, session: LiveSession) -> dict[str, Any]:
    """A session in figures, for the shift's hand-over: the cards shown and what became of them,
    the operators' decisions and their outcomes, how long a card waited for its decision (in steps
    and seconds from the step it first appeared), and the alarms raised and acknowledged."""
    stepped_at = dict(SessionStep.objects.filter(session=session).values_list("step", "stepped_at"))
    cards = Counter(LiveRecommendation.objects.filter(session=session).values_list("status", flat=True))
    decisions = list(Decision.objects.filter(session=session).select_related("recommendation"))
    waited_steps, waited_seconds = [], []
    for decision in decisions:
        card = decision.recommendation
        if card is None:
            continue
        first = card.first_step if card.first_step is not None else card.step
        waited_steps.append(decision.step - first)
        if first in stepped_at:
            waited_seconds.append(max(0.0, (decision.decided_at - stepped_at[first]).total_seconds()))
    applied = [d for d in decisions if d.status == DecisionStatus.APPLIED]
    alarms = list(Alarm.objects.filter(session=session).values("severity", "raised_at", "acknowledged_at"))
    acked = [a for a in alarms if a["acknowledged_at"] is not None]
    return {
        "steps": len(stepped_at),
        "cards": {
            "shown": sum(cards.values()),
            **{status.value: cards.get(status.value, 0) for status in RecommendationStatus},
        },
        "decisions": {
            "total": len(decisions),
            **{kind.value: sum(d.kind == kind for d in decisions) for kind in DecisionKind},
            **{
                f"status_{status.value}": sum(d.status == status for d in decisions)
                for status in DecisionStatus
            },
        },
        "outcomes": {
            "applied": len(applied),
            "overload_after": sum(bool(d.outcome.get("overloads")) for d in applied),
            "game_over_after": sum(bool(d.outcome.get("game_over")) for d in applied),
        },
        "time_to_decision": {
            "steps": _spread([float(s) for s in waited_steps]),
            "seconds": _spread(waited_seconds),
        },
        "alarms": {
            "raised": len(alarms),
            **{f"severity_{s.value}": sum(a["severity"] == s for a in alarms) for s in AlarmSeverity},
            "acknowledged": len(acked),
            "seconds_to_acknowledge": _spread(
                [(a["acknowledged_at"] - a["raised_at"]).total_seconds() for a in acked]
            ),
        },
    }
