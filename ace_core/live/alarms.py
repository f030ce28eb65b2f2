"""Alarms a step raises, read from two consecutive states of :mod:`ace_core.live.states`, and from
two consecutive assessments of the grid's security (:func:`ace_core.live.assessment_dict`)."""

from __future__ import annotations

from typing import Any


def alarms_between(
    previous: dict[str, Any] | None, current: dict[str, Any], *, done: bool, finished: bool, reason: str = ""
) -> list[dict[str, Any]]:
    """Alarms raised by a step: a line going over its limit, a line tripping (out, not for
    maintenance nor by an operator's action), a line entering maintenance, game over."""
    alarms = []
    if done and not finished:
        why = f": {reason}" if reason else ""
        alarms.append(
            {"kind": "game_over", "line": None, "message": f"game over at step {current['step']}{why}"}
        )
        return alarms
    before_over = set(previous["overloads"]) if previous else set()
    for line in current["overloads"]:
        if line not in before_over:
            alarms.append(
                {
                    "kind": "overload",
                    "line": line,
                    "message": f"line {line} overloaded (rho {current['rho'][line]:.2f})",
                }
            )
    before_maintenance = set(previous["maintenance"]) if previous else set()
    for line in current["maintenance"]:
        if line not in before_maintenance:
            alarms.append({"kind": "maintenance", "line": line, "message": f"line {line} in maintenance"})
    if previous:
        for line, (was, now) in enumerate(zip(previous["line_status"], current["line_status"])):
            if was and not now and line not in current["maintenance"]:
                alarms.append({"kind": "line_tripped", "line": line, "message": f"line {line} tripped"})
    return alarms


def _insecure(assessment: dict[str, Any] | None) -> bool:
    n1 = ((assessment or {}).get("security") or {}).get("n1")
    return bool(n1) and not n1.get("secure", True)


def _overload_ahead(assessment: dict[str, Any] | None) -> bool:
    look = ((assessment or {}).get("security") or {}).get("look_ahead") or {}
    return not look.get("skipped") and (
        look.get("first_overload_step") is not None or look.get("game_over_step") is not None
    )


def security_alarms(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[dict[str, Any]]:
    """Alarms raised when the grid's security worsens: it stops being N-1 secure, or doing nothing's
    look-ahead starts to predict an overload or a game over (raised once, not at every step)."""
    alarms = []
    security = current.get("security") or {}
    words = [a for a in security.get("alarms", [])]
    if _insecure(current) and not _insecure(previous):
        worst = (security["n1"].get("worst") or {}).get("worst_line")
        message = next((w for w in words if w.startswith("not N-1 secure")), security["n1"]["words"])
        alarms.append({"kind": "n1_insecure", "line": worst, "message": message[:500]})
    if _overload_ahead(current) and not _overload_ahead(previous):
        message = "doing nothing: " + security["look_ahead"]["status"]
        alarms.append({"kind": "overload_ahead", "line": None, "message": message[:500]})
    return alarms
