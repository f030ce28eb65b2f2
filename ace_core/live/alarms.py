"""Alarms a step raises, read from two consecutive states of :mod:`ace_core.live.states`, and from
two consecutive assessments of the grid's security (:func:`ace_core.live.assessment_dict`).

Each alarm carries a severity: ``critical`` (the grid is failing now: an overload, a tripped line,
game over; or the agent's early warning that it will fail within the horizon whatever is done,
:mod:`ace_core.recommend.alert`), ``warning`` (it will or could: an overload ahead, N-1 worse than usual) or ``info``
(planned: maintenance).

N-1 is judged against the session's **baseline**, the N-1 status of its first step: most grids are
never N-1 secure on their own (the rte 14-bus grid always has outages that overload a line), and
an alarm that is on from step 0 and never changes teaches operators to ignore it. The N-1 alarm
fires when the grid gets worse than its baseline by :data:`N1_MORE_OUTAGES` overloading outages or
:data:`N1_HIGHER_RHO` of worst-case rho, once until it is back within that margin."""

from __future__ import annotations

from typing import Any

from ace_core.grid.names import ElementNames
from ace_core.recommend.alert import alert_words

N1_MORE_OUTAGES = 2
"""overloading single outages beyond the baseline's count that make N-1 worse than usual"""
N1_HIGHER_RHO = 0.10
"""worst-case rho above the baseline's (10 points of rho) that makes N-1 worse than usual"""
SEVERITY = {
    "game_over": "critical",
    "overload": "critical",
    "line_tripped": "critical",
    "overload_ahead": "warning",
    "n1_insecure": "warning",
    "failure_ahead": "critical",
    "maintenance": "info",
}


def alarms_between(
    previous: dict[str, Any] | None,
    current: dict[str, Any],
    *,
    done: bool,
    finished: bool,
    reason: str = "",
    names: ElementNames | None = None,
    switched_off: frozenset[int] = frozenset(),
) -> list[dict[str, Any]]:
    """Alarms raised by a step: a line going over its limit, a line tripping (out, not for
    maintenance nor by the step's action: ``switched_off``, :func:`ace_core.live.actions.lines_switched_off`),
    a line entering maintenance, game over. ``names``: the grid's element names
    (:mod:`ace_core.grid.names`), which the messages use."""

    def name(line: int) -> str:
        return names.line(line) if names is not None else f"line {line}"

    alarms = []
    if done and not finished:
        why = f": {reason}" if reason else ""
        alarms.append(
            {"kind": "game_over", "line": None, "message": f"game over at step {current['step']}{why}"}
        )
        return [{**alarm, "severity": SEVERITY[alarm["kind"]]} for alarm in alarms]
    before_over = set(previous["overloads"]) if previous else set()
    for line in current["overloads"]:
        if line not in before_over:
            alarms.append(
                {
                    "kind": "overload",
                    "line": line,
                    "message": f"{name(line)} overloaded (rho {current['rho'][line]:.2f})",
                }
            )
    before_maintenance = set(previous["maintenance"]) if previous else set()
    for line in current["maintenance"]:
        if line not in before_maintenance:
            alarms.append({"kind": "maintenance", "line": line, "message": f"{name(line)} in maintenance"})
    if previous:
        for line, (was, now) in enumerate(zip(previous["line_status"], current["line_status"])):
            if was and not now and line not in current["maintenance"] and line not in switched_off:
                alarms.append({"kind": "line_tripped", "line": line, "message": f"{name(line)} tripped"})
    return [{**alarm, "severity": SEVERITY[alarm["kind"]]} for alarm in alarms]


def _insecure(assessment: dict[str, Any] | None) -> bool:
    n1 = ((assessment or {}).get("security") or {}).get("n1")
    return bool(n1) and not n1.get("secure", True)


def _overload_ahead(assessment: dict[str, Any] | None) -> bool:
    look = ((assessment or {}).get("security") or {}).get("look_ahead") or {}
    return not look.get("skipped") and (
        look.get("first_overload_step") is not None or look.get("game_over_step") is not None
    )


FAILURE_ALARM_WITHIN = 6
"""steps (30 minutes): the early warning becomes a critical alarm when the game over it expects is
at most this close. Chosen on the 14-bus validation days (``bench/alerts.py``): over doing nothing
and the operator accepting the first card, the whole hour gave precision 0.48 and recall 0.67
(4.2 false alarms a day while the cards were followed), 6 steps 0.69 and 0.50 (1.0), the best
balance; 3 steps 1.00 and 0.33. The assessment keeps the whole hour's alert."""


def _failure_ahead(assessment: dict[str, Any] | None) -> bool:
    """Whether the agent expects a game over within :data:`FAILURE_ALARM_WITHIN` steps whatever
    it does."""
    alert = (assessment or {}).get("alert") or {}
    return alert.get("level") == "failure" and (alert.get("in_steps") or 0) <= FAILURE_ALARM_WITHIN


def n1_baseline(assessment: dict[str, Any] | None, step: int = 0) -> dict[str, Any] | None:
    """The N-1 figures of ``assessment`` that later steps are compared with (None: not screened)."""
    n1 = ((assessment or {}).get("security") or {}).get("n1")
    if not n1 or n1.get("error") or n1.get("n_overloading") is None:
        return None
    worst = (n1.get("worst") or {}).get("max_rho")
    return {
        "step": step,
        "n_overloading": n1["n_overloading"],
        "worst_rho": worst,
        "status": n1.get("status"),
    }


def n1_worse(baseline: dict[str, Any] | None, assessment: dict[str, Any] | None) -> bool:
    """Whether ``assessment``'s N-1 is worse than ``baseline`` by the margins of the module."""
    now = n1_baseline(assessment)
    if baseline is None or now is None:
        return False
    if now["n_overloading"] > baseline["n_overloading"] + N1_MORE_OUTAGES:
        return True
    before, after = baseline["worst_rho"] or 0.0, now["worst_rho"] or 0.0
    return after > before + N1_HIGHER_RHO


def security_alarms(
    previous: dict[str, Any] | None,
    current: dict[str, Any],
    baseline: dict[str, Any] | None = None,
    *,
    names: ElementNames | None = None,
) -> list[dict[str, Any]]:
    """Alarms raised when the grid's security worsens: its N-1 gets worse than the session's
    ``baseline`` (without one: it stops being N-1 secure), doing nothing's look-ahead starts to
    predict an overload or a game over, or the agent's early warning expects a game over whatever
    is done (each raised once, not at every step). ``names``: the grid's element names, which the
    early warning's message uses for its lines."""
    alarms = []
    security = current.get("security") or {}
    words = [a for a in security.get("alarms", [])]
    if baseline is not None:
        if n1_worse(baseline, current) and not n1_worse(baseline, previous):
            now = n1_baseline(current)
            worst = (security["n1"].get("worst") or {}).get("worst_line")
            message = (
                f"N-1 worse than at the session's start: {now['n_overloading']} outage(s) overload a line "
                f"(at step {baseline['step']}: {baseline['n_overloading']}); {security['n1']['words']}"
            )
            alarms.append({"kind": "n1_insecure", "line": worst, "message": message[:500]})
    elif _insecure(current) and not _insecure(previous):
        worst = (security["n1"].get("worst") or {}).get("worst_line")
        message = next((w for w in words if w.startswith("not N-1 secure")), security["n1"]["words"])
        alarms.append({"kind": "n1_insecure", "line": worst, "message": message[:500]})
    if _overload_ahead(current) and not _overload_ahead(previous):
        message = "doing nothing: " + security["look_ahead"]["status"]
        alarms.append({"kind": "overload_ahead", "line": None, "message": message[:500]})
    if _failure_ahead(current) and not _failure_ahead(previous):
        alert = current["alert"]
        line = alert["lines"][0] if alert["lines"] else None
        message = "early warning: " + alert_words(alert, names)
        alarms.append({"kind": "failure_ahead", "line": line, "message": message[:500]})
    return [{**alarm, "severity": SEVERITY[alarm["kind"]]} for alarm in alarms]
