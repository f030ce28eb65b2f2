"""What a candidate action leads to, in figures and in words: the result types of the
recommendation pipeline (:mod:`ace_core.recommend.pipeline`) and their JSON for the console and the API.

The words are the operator's vocabulary, shared by every page that shows a simulated outcome:
"game over in simulation", "not allowed now", "clears the overload(s)", "creates a new
overload", never a sentinel such as "max rho -1.000".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ace_core.grid.contingency import N1Screen
from ace_core.grid.lookahead import LookAhead

OVERLOAD = 1.0
SOURCES = ("reference", "default", "policy", "expert")
"""where a candidate comes from: doing nothing (the reference), reconnect-or-nothing (the
default move), the policy's most likely actions, the greedy expert's best simulated ones"""


def outcome_words(
    *, game_over: bool, illegal: bool, error: str, before: np.ndarray, after: np.ndarray | None
) -> str:
    """One short sentence for a one-step simulated outcome."""
    if illegal:
        return "not allowed now: " + error if error else "not allowed now"
    if game_over or after is None:
        return "game over in simulation"
    now, then = before >= OVERLOAD, after >= OVERLOAD
    relieved, created, left = int((now & ~then).sum()), int((~now & then).sum()), int(then.sum())
    parts = []
    if relieved:
        parts.append(f"clears {relieved} overload{'s' if relieved > 1 else ''}")
    if created:
        parts.append(f"creates {created} new overload{'s' if created > 1 else ''}")
    if left and not created:
        parts.append(f"{left} line{'s' if left > 1 else ''} still overloaded")
    if not parts:
        parts.append("no overload")
    return f"{', '.join(parts)}; max rho {float(before.max()):.1%} -> {float(after.max()):.1%}"


def max_rho_words(max_rho: float | None, error: str = "") -> str:
    """A recorded one-step outcome in words, for records that kept only max rho: ``None`` or a
    negative value marks a simulation that gave none (the trainer writes -1), an ``error`` that
    says "illegal" an action not allowed."""
    if max_rho is None or max_rho < 0:
        return "not allowed now" if "illegal" in error.lower() else "game over in simulation"
    return f"max rho {max_rho:.1%}" + (" (overload)" if max_rho >= OVERLOAD else "")


@dataclass
class Candidate:
    """One candidate action and everything the pipeline learnt about it."""

    action_index: int
    description: str
    sources: tuple[str, ...]
    confidence: float
    """the policy's probability of this action (0 when the policy did not propose it)"""
    substations: tuple[int, ...]
    """substations the action touches (to highlight on the diagram)"""
    max_rho_before: float
    max_rho_after: float | None = None
    """simulated max rho one step ahead; None for a game over or an action not allowed now"""
    reward_after: float | None = None
    game_over: bool = False
    illegal: bool = False
    error: str = ""
    lines_relieved: tuple[int, ...] = ()
    new_overloads: tuple[int, ...] = ()
    overloads_after: tuple[int, ...] = ()
    outcome: str = ""
    n1: N1Screen | None = None
    look_ahead: LookAhead | None = None
    rank: int | None = None
    """1 for the top recommendation; None for the reference and rejected candidates"""
    rejected_because: str = ""

    @property
    def failed(self) -> bool:
        return self.game_over or self.illegal

    def to_json(self, top_outages: int = 10) -> dict:
        """``top_outages``: how many overloading or diverging outages of its N-1 to list."""
        return {
            "action_index": self.action_index,
            "description": self.description,
            "sources": list(self.sources),
            "confidence": self.confidence,
            "substations": list(self.substations),
            "rank": self.rank,
            "outcome": self.outcome,
            "max_rho_before": self.max_rho_before,
            "max_rho_after": self.max_rho_after,
            "reward_after": self.reward_after,
            "game_over": self.game_over,
            "illegal": self.illegal,
            "error": self.error,
            "lines_relieved": list(self.lines_relieved),
            "new_overloads": list(self.new_overloads),
            "overloads_after": list(self.overloads_after),
            "n1": None if self.n1 is None else self.n1.to_json(top_outages),
            "look_ahead": None if self.look_ahead is None else self.look_ahead.to_json(),
            "rejected_because": self.rejected_because,
        }


@dataclass(frozen=True)
class StateSecurity:
    """The live state's own security: its N-1 status and what doing nothing leads to."""

    n1: N1Screen | None
    look_ahead: LookAhead | None
    alarms: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "n1": None if self.n1 is None else self.n1.to_json(),
            "look_ahead": None if self.look_ahead is None else self.look_ahead.to_json(),
            "alarms": list(self.alarms),
        }


@dataclass
class RecommendationSet:
    """Everything one pipeline run returns; ``to_json()`` is what the console and the API send."""

    reference: Candidate
    """doing nothing, always simulated and screened: the yardstick of every card"""
    recommendations: list[Candidate]
    """best first by the safety order; none of them worse than doing nothing"""
    rejected: list[Candidate]
    """considered and rejected by simulation, each with ``rejected_because``"""
    security: StateSecurity
    forecast: dict
    timings_ms: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def to_json(self, top_outages: int = 10) -> dict:
        """``top_outages`` per candidate's N-1 (the live state's own N-1 always lists 10): a
        console sending every step may want 3."""
        return {
            "reference": self.reference.to_json(top_outages),
            "recommendations": [c.to_json(top_outages) for c in self.recommendations],
            "rejected": [c.to_json(top_outages) for c in self.rejected],
            "security": self.security.to_json(),
            "forecast": self.forecast,
            "timings_ms": self.timings_ms,
            "notes": list(self.notes),
        }
