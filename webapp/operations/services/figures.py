"""The simulated figures an operator saw when deciding, kept with the decision and its audit entry:
the card's (or the what-if's) one-step outcome, N-1 worst case, look-ahead, max rho on the grid as
it is now and the cost of its continuous move, if any, and the grid's own N-1 status and doing
nothing's look-ahead at that step, with the kind of forecast behind them."""

from __future__ import annotations

from typing import Any

from webapp.operations.models import LiveRecommendation, LiveSession, SessionStep


def _n1_summary(n1: dict[str, Any] | None) -> dict[str, Any] | None:
    if not n1:
        return None
    worst = n1.get("worst") or {}
    return {
        "status": n1.get("status"),
        "secure": n1.get("secure"),
        "n_overloading": n1.get("n_overloading"),
        "worst_outage": worst.get("outage_name"),
        "worst_line": worst.get("worst_line_name"),
        "worst_rho": worst.get("max_rho"),
    }


def _look_ahead_summary(look_ahead: dict[str, Any] | None) -> dict[str, Any] | None:
    if not look_ahead:
        return None
    return {
        "status": look_ahead.get("status"),
        "forecast": (look_ahead.get("forecast") or {}).get("kind"),
        "max_rho": look_ahead.get("max_rho"),
        "first_overload_minutes": look_ahead.get("first_overload_minutes"),
        "game_over_step": look_ahead.get("game_over_step"),
    }


def _now_summary(now: dict[str, Any] | None) -> dict[str, Any] | None:
    if not now:
        return None
    return {"max_rho": now.get("max_rho_after"), "game_over": now.get("game_over")}


def _action_figures(headline: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "max_rho_before": headline.get("max_rho_before"),
        "max_rho_after": headline.get("max_rho_after"),
        "lines_relieved": headline.get("lines_relieved", []),
        "new_overloads": headline.get("new_overloads", []),
        "outcome": figures.get("outcome"),
        "rank_reason": figures.get("rank_reason") or "",
        "n1": _n1_summary(figures.get("n1")),
        "look_ahead": _look_ahead_summary(figures.get("look_ahead")),
        "now": _now_summary(figures.get("now")),
        "rejected_because": figures.get("rejected_because") or "",
        # a continuous move's cost (MW moved, euros per hour), as the card or what-if showed it
        **({"cost": figures["cost"]} if figures.get("cost") else {}),
    }


def _grid_figures(session: LiveSession, step: int) -> dict[str, Any]:
    assessment = (
        SessionStep.objects.filter(session=session, step=step).values_list("assessment", flat=True).first()
        or {}
    )
    security = assessment.get("security") or {}
    reference = assessment.get("reference") or {}
    return {
        "do_nothing_max_rho_after": reference.get("max_rho_after"),
        "n1": _n1_summary(security.get("n1")),
        "look_ahead": _look_ahead_summary(security.get("look_ahead")),
        "alarms": security.get("alarms", []),
        "forecast": (assessment.get("forecast") or {}).get("kind"),
    }


def seen_for_recommendation(session: LiveSession, rec: LiveRecommendation) -> dict[str, Any]:
    """What the card of ``rec`` and the grid's assessment at its step showed."""
    headline = {
        "max_rho_before": rec.max_rho_before,
        "max_rho_after": rec.max_rho_after,
        "lines_relieved": rec.lines_relieved,
        "new_overloads": rec.new_overloads,
    }
    return {
        "action": _action_figures(headline, rec.figures or {}),
        "grid": _grid_figures(session, rec.step),
        "source": rec.source,
        "confidence": rec.confidence,
        "shown_since_step": rec.first_step if rec.first_step is not None else rec.step,
    }


def seen_for_what_if(session: LiveSession, step: int, outcome: dict[str, Any]) -> dict[str, Any]:
    """What the what-if of an operator's own action and the grid's assessment showed."""
    return {
        "action": _action_figures(outcome, outcome.get("figures") or {}),
        "grid": _grid_figures(session, step),
        "source": "operator",
    }
