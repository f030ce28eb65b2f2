"""The live messages a console receives, built from rows (JSON-ready dicts).

``snapshot`` on connect (the drawing, the full state, the timeline, the panels), ``step`` at every
grid step (the state as a delta of the previous one, the new recommendations with their N-1 and
look-ahead figures, the step's assessment: doing nothing's outcome, the candidates rejected by
simulation, the grid's N-1 status and look-ahead, the forecast used; and alarms), and
``panel`` when operators change something (decisions, acknowledgements, explanations, controls).
Every message is encoded once and relayed as-is to every watcher.
"""

from __future__ import annotations

from typing import Any

from ace_core.live import state_delta
from webapp.operations.models import Alarm, Decision, LiveRecommendation, LiveSession, SessionStep


def group_name(session_id: int) -> str:
    return f"operations.session.{session_id}"


def session_dict(session: LiveSession) -> dict[str, Any]:
    return {
        "id": session.pk,
        "label": session.label,
        "env": session.env,
        "scenario": session.scenario_name,
        "status": session.status,
        "speed_seconds": session.speed_seconds,
        "current_step": session.current_step,
        "decisions_open": session.decisions_open,
        "end_reason": session.end_reason,
        "resumes": session.resumes,
        "revision": session.revision,
    }


def recommendation_dict(rec: LiveRecommendation) -> dict[str, Any]:
    return {
        "id": rec.pk,
        "step": rec.step,
        "first_step": rec.first_step if rec.first_step is not None else rec.step,
        "rank": rec.rank,
        "action": rec.action,
        "description": rec.description,
        "confidence": rec.confidence,
        "source": rec.source,
        "max_rho_before": rec.max_rho_before,
        "max_rho_after": rec.max_rho_after,
        "lines_relieved": rec.lines_relieved,
        "new_overloads": rec.new_overloads,
        "error": rec.error,
        "figures": rec.figures,
        "status": rec.status,
        "explanation_status": rec.explanation_status,
        "explanation": rec.explanation,
        "explanation_model": rec.explanation_model,
        "expired_because": rec.expired_because,
    }


def alarm_dict(alarm: Alarm) -> dict[str, Any]:
    return {
        "id": alarm.pk,
        "step": alarm.step,
        "kind": alarm.kind,
        "severity": alarm.severity,
        "line": alarm.line,
        "message": alarm.message,
        "raised_at": alarm.raised_at.isoformat(),
        "acknowledged_by": alarm.acknowledged_by.get_username() if alarm.acknowledged_by_id else None,
        "acknowledged_at": alarm.acknowledged_at.isoformat() if alarm.acknowledged_at else None,
    }


def decision_dict(decision: Decision) -> dict[str, Any]:
    return {
        "id": decision.pk,
        "step": decision.step,
        "kind": decision.kind,
        "recommendation": decision.recommendation_id,
        "description": decision.description,
        "decided_by": decision.decided_by.get_username(),
        "decided_at": decision.decided_at.isoformat(),
        "status": decision.status,
        "applied_step": decision.applied_step,
        "outcome": decision.outcome,
        "figures_seen": decision.figures_seen,
    }


def step_message(
    *,
    session: LiveSession,
    row: SessionStep,
    previous_state: dict[str, Any] | None,
    recommendations: list[LiveRecommendation],
    alarms: list[Alarm],
    applied: Decision | None,
    expired: list[LiveRecommendation] = (),
) -> dict[str, Any]:
    return {
        "kind": "step",
        "session": session_dict(session),
        "step": row.step,
        # when the worker recorded the step (ms since the epoch): pages measure their lag from it
        "stepped_at": row.stepped_at.timestamp() * 1000.0,
        "state": state_delta(previous_state, row.state),
        "recommend_ms": row.recommend_ms,
        "assessment": row.assessment,
        "recommendations": [recommendation_dict(r) for r in recommendations],
        "alarms": [alarm_dict(a) for a in alarms],
        "applied": decision_dict(applied) if applied is not None else None,
        # cards that were open and are not any more, each with the reason
        "expired": [
            {
                "id": r.pk,
                "description": r.description,
                "first_step": r.first_step,
                "reason": r.expired_because,
            }
            for r in expired
        ],
    }
