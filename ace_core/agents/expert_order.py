"""The greedy expert's order (:mod:`ace_core.agents.expert`): what one step of its search saw, a
candidate's simulated max rho, the order that picks among candidates and the N-1 order that
re-ranks the best of them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ace_core.grid.contingency import N1Screen
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.outcome import max_rho_after
from ace_core.grid.simulate import Simulated


@dataclass
class Search:
    """What one step of the expert saw: the candidates it simulated and their outcomes."""

    action: int
    candidates: list[int]
    max_rho: list[float]
    """simulated max rho of each candidate (inf: game over or illegal)"""
    stressed: bool
    screened: int = 0
    """contingency analyses run to pick the action (``n1``), each after a re-simulation"""
    move: FlexMove | None = None
    """the continuous move played with ``action`` (``flex``), if any"""
    flexed: int = 0
    """simulations spent on continuous moves (``flex``)"""
    rechecked: int = 0
    """candidates simulated again on the current injections (``now``)"""

    @property
    def simulations(self) -> int:
        return len(self.candidates) + self.screened + self.flexed + self.rechecked


def max_rho(outcome: Simulated) -> float:
    """Max rho one step after an action; infinity for a game over or an illegal action."""
    value = max_rho_after(outcome)
    return float("inf") if value is None else value


def rank_key(rho: float, changes: int, position: int) -> tuple[float, int, int]:
    """The expert's order: lowest max rho (to 1e-3), then fewest bus changes, then list order."""
    return (round(rho, 3) if np.isfinite(rho) else float("inf"), changes, position)


def n1_key(screen: N1Screen | None) -> tuple[float, float]:
    """The N-1 order: fewest outages that cut off a load or generator or diverge, then the lowest
    max rho after the worst other outage (to 1e-3); an unscreened grid comes last."""
    if screen is None or screen.error:
        return (float("inf"), float("inf"))
    worst = screen.worst_rho
    return (float(len(screen.diverged)), round(worst, 3) if worst is not None else 0.0)
