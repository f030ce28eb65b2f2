"""The live messages a console receives, built from rows (JSON-ready dicts).

``snapshot`` on connect (the drawing, the full state, the timeline, the panels), ``step`` at every
grid step (the state as a delta of the previous one, the new recommendations with their N-1 and
look-ahead figures, the step's assessment: doing nothing's outcome, the candidates rejected by
simulation, the grid's N-1 status and look-ahead, the forecast used; and alarms), and
``panel`` when operators change something (decisions, acknowledgements, explanations, controls).
Every message is encoded once and relayed as-is to every watcher.

What goes out at each step is only what changed since the previous step (:class:`StepChanges`):
a thousand consoles receive the same message, so its size is what the fan-out costs. The
recommendations and the assessment leave out what the console never shows (:data:`CARD_HIDDEN`,
:data:`ASSESSMENT_HIDDEN`), and each is sent as a *part*: ``{"whole": value}``, or the changes
since the previous step, ``{"set": [[path, value], ...], "unset": [path, ...]}`` (paths are
dotted keys, list positions as digits; ``{}``: unchanged). A console merges the parts into what it
has (:func:`apply_changes` is the same merge in Python); one that missed a step reconnects and
starts again from the snapshot, which is whole.
"""

from __future__ import annotations

import copy
from typing import Any

from ace_core.live import state_delta
from webapp.live.broadcast import encode
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
        "explanation_facts": rec.explanation_facts,
        "explanation_flags": rec.explanation_flags,
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
    """The step's message with its cards and assessment whole; what the consoles receive is its
    :meth:`StepChanges.compact` form (the whole parts only where nothing came before)."""
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


# ----- what changed since the previous step ---------------------------------------------------
Hidden = dict[str, "bool | Hidden"]
"""the keys of a value the console never shows: True for a key left out, a dict for the keys left
out of its value (of each item, for a list). Anything else is sent, new fields included."""

LOOK_AHEAD_HIDDEN: Hidden = {
    "status": True,
    "first_overload_step": True,
    "forecast": {"kind": True, "description": True, "horizon_steps": True},
}
N1_HIDDEN: Hidden = {
    "status": True,
    "words": True,
    "screened": True,
    "skipped": True,
    "solver_ms": True,
    "error": True,
    "worst": {"outage": True, "diverged": True, "reason": True, "worst_line": True, "overloaded": True},
    "outages": {"outage": True, "worst_line": True},
}
CARD_HIDDEN: Hidden = {
    "figures": {
        "sources": True,
        "rank": True,
        "outcome": True,
        "overloads_after": True,
        "game_over": True,
        "illegal": True,
        "rejected_because": True,
        "n1": {**N1_HIDDEN, "outages": True, "lines_at_risk": True},
        "look_ahead": LOOK_AHEAD_HIDDEN,
        "now": {"outcome": True},
    },
}
"""what a card (static/js/live_console.js ``fillCard``) never shows of a recommendation: the
simulation's details behind the figures it prints"""

ASSESSMENT_HIDDEN: Hidden = {
    "timings_ms": True,
    "also_safe": True,
    "forecast": {"horizon_steps": True, "horizon_minutes": True},
    # doing nothing is shown by its outcome and look-ahead (the grid's own N-1 is ``security``)
    "reference": {
        **{
            key: True
            for key in (
                "action_index",
                "description",
                "sources",
                "confidence",
                "substations",
                "rank",
                "rank_reason",
                "max_rho_before",
                "max_rho_after",
                "reward_after",
                "game_over",
                "illegal",
                "error",
                "lines_relieved",
                "new_overloads",
                "overloads_after",
                "n1",
                "now",
                "rejected_because",
                "move",
                "cost",
            )
        },
        "look_ahead": LOOK_AHEAD_HIDDEN,
    },
    "security": {"n1": N1_HIDDEN, "look_ahead": True},
    "rejected": {"action_index": True, "max_rho_after": True, "outcome": True},
    # the early-warning banner says it from the level, the minutes, the lines and the option
    "alert": {"in_steps": True, "words": True},
}
"""what the console (``showAssessment``, the early-warning banner, and the lines at risk on the
diagram) never shows of a step's assessment: timings, solver details, the candidates kept out of
the cards, doing nothing's own figures, the grid's look-ahead (the reference's is shown), the
alert's words (its lines are named from the drawing's names)"""


def console_view(value: Any, hidden: Hidden) -> Any:
    """``value`` without what ``hidden`` names (a copy of the dicts it goes through)."""
    if isinstance(value, list):
        return [console_view(item, hidden) for item in value]
    if not isinstance(value, dict):
        return value
    view = {}
    for key, item in value.items():
        rule = hidden.get(key)
        if rule is True:
            continue
        view[key] = console_view(item, rule) if rule else item
    return view


def changes(old: Any, new: Any) -> dict[str, Any]:
    """What turns ``old`` into ``new`` (both dicts): ``{"set": [[path, value], ...], "unset":
    [path, ...]}``, each left out when empty. Dicts are compared key by key, lists of dicts or
    lists item by item when their lengths match; anything else is replaced whole."""
    set_, unset = [], []
    _compare(old, new, [], set_, unset)
    part: dict[str, Any] = {}
    if set_:
        part["set"] = set_
    if unset:
        part["unset"] = unset
    return part


def _plain(key: Any) -> bool:
    """A key a dotted path can name (a string, neither dotted nor all digits)."""
    return isinstance(key, str) and "." not in key and not key.isdigit()


def _compare(old: Any, new: Any, path: list[str], set_: list, unset: list) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and all(_plain(key) for key in (*old, *new)):
        for key, value in new.items():
            if key in old:
                _compare(old[key], value, [*path, key], set_, unset)
            else:
                set_.append([".".join([*path, key]), value])
        unset.extend(".".join([*path, key]) for key in old if key not in new)
        return
    if (
        path
        and isinstance(old, list)
        and isinstance(new, list)
        and len(old) == len(new)
        and any(isinstance(item, (dict, list)) for item in new)
    ):
        for i, (before, after) in enumerate(zip(old, new)):
            _compare(before, after, [*path, str(i)], set_, unset)
        return
    set_.append([".".join(path), new])


def apply_changes(current: Any, part: dict[str, Any]) -> Any:
    """``current`` with ``part`` merged in (a copy; static/js/live_console.js ``applyChanges``
    does the same in place)."""
    if "whole" in part:
        return copy.deepcopy(part["whole"])
    merged = copy.deepcopy(current)
    for path, value in part.get("set", []):
        *parents, last = path.split(".")
        node = merged
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = copy.deepcopy(value)
        else:
            node[last] = copy.deepcopy(value)
    for path in part.get("unset", []):
        *parents, last = path.split(".")
        node = merged
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]
    return merged


def _part(before: Any, after: Any) -> dict[str, Any]:
    """``after`` as the changes since ``before``, or whole when there is no ``before`` or when the
    changes would be longer."""
    whole = {"whole": after}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return whole
    delta = changes(before, after)
    return delta if len(encode(delta)) < len(encode(whole)) else whole


class StepChanges:
    """What the consoles already have of the recommendations and the assessment (the views of the
    last step message sent); turns each step message into one that carries only what changed.

    One per session feed (the worker's broadcast) and per relay of newer rows; the first message
    through it is whole. The console knows what each part applies to: the step before (it
    reconnects when it missed one)."""

    def __init__(self) -> None:
        self.assessment: dict[str, Any] | None = None
        self.cards: dict[int, dict[str, Any]] = {}

    def compact(self, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` (a :func:`step_message`) with its assessment and recommendations as parts."""
        assessment = console_view(message["assessment"] or {}, ASSESSMENT_HIDDEN)
        cards = [console_view(rec, CARD_HIDDEN) for rec in message["recommendations"]]
        out = {
            **message,
            "assessment": _part(self.assessment, assessment),
            # in rank order; an unchanged card is its id alone
            "recommendations": [
                {"id": card["id"], **_part(self.cards.get(card["id"]), card)} for card in cards
            ],
        }
        self.assessment = assessment
        self.cards = {card["id"]: card for card in cards}
        return out
