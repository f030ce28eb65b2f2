"""Live sessions over HTTP: start one (the start form's checks), list them, control them (pause,
resume, single steps, speed, stop: the console's buttons), read a session's state (the console's
snapshot) and its current recommendations with their simulated evidence, accept or reject one,
run a what-if, acknowledge an alarm. Every write goes through the operations services, which
audit it as on the console.

A session's grid is grid2op's own simulation; pushing outside measurements into it is not
supported yet.
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import Http404, HttpRequest
from ninja import Router, Status

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import limit_param, offset_param, page, responses
from webapp.api.schemas.recommendations import (
    RecommendationDecisionIn,
    RecommendationsOut,
    WhatIfIn,
    WhatIfOut,
)
from webapp.api.schemas.sessions import (
    AlarmOut,
    DecisionOut,
    SessionForkIn,
    SessionOut,
    SessionPage,
    SessionSpeedIn,
    SessionStartIn,
    StateOut,
)
from webapp.live.session_messages import alarm_dict, decision_dict, recommendation_dict, session_dict
from webapp.operations import mirror, selectors, services
from webapp.operations.models import LiveSession, SessionStatus

router = Router(tags=["operations"])

SessionStatusFilter = Literal[tuple(SessionStatus.values)]  # type: ignore[valid-type]


def _session(session_id: int) -> LiveSession:
    session = selectors.session_get(pk=session_id)
    if session is None:
        raise Http404(f"no live session {session_id}")
    return session


@router.get("/sessions", response=responses(SessionPage), **gate(roles.VIEW_SESSIONS))
def session_list(
    request: HttpRequest,
    status: SessionStatusFilter | None = None,
    limit: int = limit_param(),
    offset: int = offset_param(),
) -> dict[str, Any]:
    """Live sessions, newest first."""
    sessions = selectors.session_list()
    if status:
        sessions = sessions.filter(status=status)
    return page(sessions, limit=limit, offset=offset, to_dict=session_dict)


@router.post("/sessions", response=responses(SessionOut, status=201), **gate(roles.START_SESSIONS))
def session_start(request: HttpRequest, payload: SessionStartIn) -> Status:
    """Start a live session of the deployed policy, with the start form's settings; a feed worker
    picks it up within a second. 409 when no policy is deployed, 400 naming ``scenario_index``
    (and the days accepted) for a day the deployed policy's env does not have."""
    session = services.session_start(user=request.user, **payload.model_dump())
    return Status(201, session_dict(session))


@router.post(
    "/sessions/{session_id}/fork", response=responses(SessionOut, status=201), **gate(roles.START_SESSIONS)
)
def session_fork(request: HttpRequest, session_id: int, payload: SessionForkIn) -> Status:
    """A new paused session that opens at a recorded step of this one: the same day, seed,
    settings and frozen policy, the steps before it copied and the action that reached it played
    again, so the grid is the one the operators had then (an incident gone over again)."""
    session = services.session_fork(
        session_id=_session(session_id).pk, user=request.user, **payload.model_dump()
    )
    return Status(201, session_dict(session))


def _control(request: HttpRequest, session_id: int, command: str, speed: float | None = None) -> dict:
    session = services.session_control(
        session_id=_session(session_id).pk, user=request.user, command=command, speed_seconds=speed
    )
    return session_dict(session)


@router.post("/sessions/{session_id}/pause", response=responses(SessionOut), **gate(roles.CONTROL_SESSIONS))
def session_pause(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """Pause a running session: the grid stops moving until resumed (409 once it has ended)."""
    return _control(request, session_id, "pause")


@router.post("/sessions/{session_id}/resume", response=responses(SessionOut), **gate(roles.CONTROL_SESSIONS))
def session_resume(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """Let a paused session run again at its speed (409 once it has ended)."""
    return _control(request, session_id, "resume")


@router.post("/sessions/{session_id}/step", response=responses(SessionOut), **gate(roles.CONTROL_SESSIONS))
def session_step(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """Play one step of a paused session (409 while it runs: pause it first)."""
    return _control(request, session_id, "step")


@router.post("/sessions/{session_id}/speed", response=responses(SessionOut), **gate(roles.CONTROL_SESSIONS))
def session_speed(request: HttpRequest, session_id: int, payload: SessionSpeedIn) -> dict[str, Any]:
    """Set the seconds per step of a running or paused session."""
    return _control(request, session_id, "speed", payload.speed_seconds)


@router.post("/sessions/{session_id}/stop", response=responses(SessionOut), **gate(roles.START_SESSIONS))
def session_stop(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """End a session for good. As on the console, only engineers stop sessions; operators pause."""
    return _control(request, session_id, "stop")


@router.get("/sessions/{session_id}/state", response=responses(StateOut), **gate(roles.VIEW_SESSIONS))
def session_state(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """The message a console receives when it connects: the session, its recommendations,
    alarms and decisions, the grid drawing, the full state and the timeline."""
    found = selectors.snapshot(session_id=session_id)
    if found is None:
        raise Http404(f"no live session {session_id}")
    message, cursor = found
    return {**message, "cursor": cursor}


@router.get(
    "/sessions/{session_id}/recommendations",
    response=responses(RecommendationsOut),
    **gate(roles.VIEW_SESSIONS),
)
def session_recommendations(request: HttpRequest, session_id: int) -> dict[str, Any]:
    """The current step's recommendations, best first, each with its one-step simulation."""
    session = _session(session_id)
    return {
        "session": session.pk,
        "step": session.current_step,
        "decisions_open": session.decisions_open,
        "items": [recommendation_dict(r) for r in selectors.open_recommendations(session=session)],
    }


@router.post(
    "/sessions/{session_id}/recommendations/{recommendation_id}/decision",
    response=responses(DecisionOut),
    **gate(roles.OPERATE_SESSIONS),
)
def recommendation_decide(
    request: HttpRequest, session_id: int, recommendation_id: int, payload: RecommendationDecisionIn
) -> dict[str, Any]:
    """Accept (played at the next step) or reject one of the current step's recommendations.
    409 when another decision already holds the step."""
    session = _session(session_id)
    decision = services.recommendation_decide(
        session_id=session.pk,
        recommendation_id=recommendation_id,
        user=request.user,
        step=payload.step,
        decision=payload.decision,
        comment=payload.comment,
    )
    return decision_dict(decision)


@router.post("/sessions/{session_id}/what-if", response=responses(WhatIfOut), **gate(roles.OPERATE_SESSIONS))
def session_what_if(request: HttpRequest, session_id: int, payload: WhatIfIn) -> dict[str, Any]:
    """Simulate an action one step ahead from a recorded state (nothing is played)."""
    return mirror.what_if(session=_session(session_id), step=payload.step, action=payload.action)


@router.post(
    "/sessions/{session_id}/alarms/{alarm_id}/acknowledge",
    response=responses(AlarmOut),
    **gate(roles.OPERATE_SESSIONS),
)
def alarm_acknowledge(request: HttpRequest, session_id: int, alarm_id: int) -> dict[str, Any]:
    """Acknowledge one of the session's alarms (404 for an alarm of another session, 409 when
    someone acknowledged it already)."""
    alarm = services.alarm_acknowledge(
        session_id=_session(session_id).pk, alarm_id=alarm_id, user=request.user
    )
    return alarm_dict(alarm)
