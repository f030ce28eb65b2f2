"""What a candidate action leads to, in figures and in words: the result types of the
recommendation pipeline's stages (:mod:`ace_core.recommend.pipeline`): a :class:`Proposal`, a
:class:`Candidate` (a proposal and its simulated :class:`~ace_core.grid.outcome.Outcome`, then its
N-1 screen, look-ahead, check on the grid as it is now and rank), a :class:`RecommendationSet`;
and their JSON for the console and the API.

The words are the operator's vocabulary, shared by every page that shows a simulated outcome:
"game over in simulation", "not allowed now", "clears the overload(s)", "creates a new
overload", never a sentinel such as "max rho -1.000". A card with a continuous move (redispatch,
curtailment, storage: :mod:`ace_core.grid.flex`) carries the move and its cost, MW moved and euros
per hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ace_core.grid.contingency import N1Screen
from ace_core.grid.flex.moves import FlexMove, MoveCost
from ace_core.grid.lookahead import LookAhead
from ace_core.grid.outcome import OVERLOAD, Outcome
from ace_core.recommend.alert import Alert, expect_failure

SOURCES = ("reference", "default", "policy", "expert", "flex")
"""where a candidate comes from: doing nothing (the reference), reconnect-or-nothing (the
default move), the policy's most likely actions, the greedy expert's best simulated ones, the
continuous moves tried when topology is not enough (:mod:`ace_core.recommend.flex`)"""


def outcome_words(outcome: Outcome) -> str:
    """One short sentence for a one-step simulated outcome."""
    if outcome.illegal:
        return "not allowed now: " + outcome.reason if outcome.reason else "not allowed now"
    if outcome.failed:
        return "game over in simulation"
    relieved, created = len(outcome.lines_relieved), len(outcome.new_overloads)
    left = len(outcome.overloads_after)
    parts = []
    if relieved:
        parts.append(f"clears {relieved} overload{'s' if relieved > 1 else ''}")
    if created:
        parts.append(f"creates {created} new overload{'s' if created > 1 else ''}")
    if left and not created:
        parts.append(f"{left} line{'s' if left > 1 else ''} still overloaded")
    if not parts:
        parts.append("no overload")
    return f"{', '.join(parts)}; max rho {outcome.max_rho_before:.1%} -> {outcome.max_rho_after:.1%}"


def now_json(outcome: Outcome) -> dict:
    """A card's check on the grid as it is now (:attr:`Candidate.now`), as the console shows it."""
    return {
        "outcome": outcome_words(outcome),
        "max_rho_after": outcome.max_rho_after,
        "game_over": outcome.game_over,
        "overloads_after": list(outcome.overloads_after),
    }


def max_rho_words(max_rho: float | None, error: str = "") -> str:
    """A recorded one-step outcome in words, for records that kept only max rho: ``None`` or a
    negative value marks a simulation that gave none (the trainer writes -1), an ``error`` that
    says "illegal" an action not allowed."""
    if max_rho is None or max_rho < 0:
        return "not allowed now" if "illegal" in error.lower() else "game over in simulation"
    return f"max rho {max_rho:.1%}" + (" (overload)" if max_rho >= OVERLOAD else "")


@dataclass(frozen=True)
class Proposal:
    """A candidate action before simulation: what it is and who proposed it."""

    action_index: int
    description: str
    sources: tuple[str, ...]
    confidence: float
    """the policy's probability of this action (0 when the policy did not propose it)"""
    substations: tuple[int, ...]
    """substations the action touches (to highlight on the diagram)"""
    parts: tuple[int, ...] = ()
    """a combined card's two action indices (:mod:`ace_core.recommend.pairs`), or the one topology
    action played with a continuous move (:mod:`ace_core.recommend.flex`); empty otherwise"""
    move: FlexMove | None = None
    """the continuous move played with the action (:mod:`ace_core.recommend.flex`), if any"""
    cost: MoveCost | None = None
    """what the move changes (MW) and costs (euros per hour); None without a move"""


@dataclass(frozen=True)
class Candidate(Proposal):
    """A proposal and what the pipeline's stages learnt about it: its one-step outcome, then its
    N-1 screen, look-ahead and check on the grid as it is now when computed, then its rank or why
    it is rejected."""

    outcome: Outcome = field(kw_only=True)
    now: Outcome | None = None
    """the action played on the grid as it is now, not on the next step's forecast (grid2op's
    simulation with no time step ahead), for the cards looked ahead: a forecast's load error
    falls on the slack generator, and a topology that leaves it with one line can look safe on
    the forecast and overload that line in reality; None when not computed, or when the grid
    carries no forecasts (``outcome`` is then already on the grid as it is)"""
    n1: N1Screen | None = None
    look_ahead: LookAhead | None = None
    rank: int | None = None
    """1 for the top recommendation; None for the reference and rejected candidates"""
    rank_reason: str = ""
    """why it sits at its rank, in the safety order's terms (:func:`ace_core.recommend.ranking.rank_reason`)"""
    rejected_because: str = ""

    @classmethod
    def of(cls, proposal: Proposal, outcome: Outcome) -> Candidate:
        return cls(**{f.name: getattr(proposal, f.name) for f in fields(Proposal)}, outcome=outcome)

    @property
    def failed(self) -> bool:
        return self.outcome.failed

    @property
    def euros_per_hour(self) -> float:
        """what holding its continuous move costs (0 for topology alone)"""
        return 0.0 if self.cost is None else self.cost.euros_per_hour

    @property
    def words(self) -> str:
        """The one-step outcome in words (``outcome`` in the JSON)."""
        return outcome_words(self.outcome)

    @property
    def now_words(self) -> str:
        """Its check on the grid as it is now, in words."""
        return "not checked" if self.now is None else outcome_words(self.now)

    def to_json(self, top_outages: int = 10) -> dict:
        """``top_outages``: how many overloading or diverging outages of its N-1 to list."""
        outcome = self.outcome
        return {
            "action_index": self.action_index,
            "parts": list(self.parts),
            "description": self.description,
            "sources": list(self.sources),
            "confidence": self.confidence,
            "substations": list(self.substations),
            "rank": self.rank,
            "rank_reason": self.rank_reason,
            "outcome": self.words,
            "max_rho_before": outcome.max_rho_before,
            "max_rho_after": outcome.max_rho_after,
            "reward_after": outcome.reward,
            "game_over": outcome.game_over,
            "illegal": outcome.illegal,
            "error": outcome.error,
            "lines_relieved": list(outcome.lines_relieved),
            "new_overloads": list(outcome.new_overloads),
            "overloads_after": list(outcome.overloads_after),
            "now": None if self.now is None else now_json(self.now),
            "n1": None if self.n1 is None else self.n1.to_json(top_outages),
            "look_ahead": None if self.look_ahead is None else self.look_ahead.to_json(),
            "rejected_because": self.rejected_because,
            "move": None if self.move is None else self.move.to_dict(),
            "cost": None if self.cost is None else self.cost.to_dict(),
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


@dataclass(frozen=True)
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

    @property
    def alert(self) -> Alert:
        """The early warning: whether every option looked ahead fails within the horizon."""
        options = [self.reference, *self.recommendations]
        return expect_failure([(c.description, c.look_ahead) for c in options])

    def to_json(self, top_outages: int = 10) -> dict:
        """``top_outages`` per candidate's N-1 (the live state's own N-1 always lists 10): a
        console sending every step may want 3."""
        return {
            "alert": self.alert.to_json(),
            "reference": self.reference.to_json(top_outages),
            "recommendations": [c.to_json(top_outages) for c in self.recommendations],
            "rejected": [c.to_json(top_outages) for c in self.rejected],
            "security": self.security.to_json(),
            "forecast": self.forecast,
            "timings_ms": self.timings_ms,
            "notes": list(self.notes),
        }
