"""Alarms a step raises, read from two consecutive states of :mod:`ace_core.live.states`."""

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
