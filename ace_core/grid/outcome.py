"""What one action simulated one step ahead leads to, read once for every caller.

:func:`outcome_of` turns grid2op's raw answer (:class:`~ace_core.grid.simulate.Simulated`) into an
:class:`Outcome`: whether the step can be used (and if not, the :class:`Failure` and grid2op's
reason), the max rho after it, and, against the rho before it, the lines relieved, the new
overloads and the lines left overloaded. The recommendation pipeline, its what-if and the live
console's what-if all read a simulation through it; the greedy expert and the LLM actor, which
only need max rho or the failure, use :func:`failure` and :func:`max_rho_after`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ace_core.grid.simulate import Simulated

OVERLOAD = 1.0
"""rho from which a line is overloaded"""


class Failure(Enum):
    """Why a simulated step cannot be used, each with its one wording; :func:`failure` checks them
    in this order."""

    ILLEGAL = "illegal"
    """grid2op's rules refuse the action now (cooldown, maintenance, too many changes at once)"""
    GRID_FAILS = "the grid would fail"
    """the step ends the episode: a game over (the power flow diverges, a load or a generator is
    cut off, a cascade)"""
    SIMULATION_ERROR = "simulation error"
    """grid2op reports an exception and the episode goes on (e.g. an ambiguous action)"""


def failure(simulated: Simulated) -> Failure | None:
    """The first :class:`Failure` that applies to the simulated step, or None when it can be used."""
    _, _, done, info = simulated
    if info.get("is_illegal"):
        return Failure.ILLEGAL
    if done:
        return Failure.GRID_FAILS
    if info.get("exception"):
        return Failure.SIMULATION_ERROR
    return None


def max_rho_after(simulated: Simulated) -> float | None:
    """Max rho one step after the action; None when the step cannot be used (see :func:`failure`)."""
    return None if failure(simulated) else float(np.max(simulated.rho))


def exception_text(info: dict) -> str:
    """The first line of grid2op's first exception in ``info`` (300 characters at most), or ""."""
    exceptions = info.get("exception") or []
    if not exceptions:
        return ""
    first = exceptions[0] if isinstance(exceptions, list | tuple) else exceptions
    return str(first).splitlines()[0][:300] if str(first) else type(first).__name__


@dataclass(frozen=True)
class Outcome:
    """One action simulated one step ahead, against the state it starts from."""

    max_rho_before: float
    max_rho_after: float | None = None
    """None when the step cannot be used (see ``failure``)"""
    reward: float | None = None
    """the env's reward for the step; None when it cannot be used"""
    failure: Failure | None = None
    reason: str = ""
    """grid2op's exception when the step cannot be used (:func:`exception_text`)"""
    lines_relieved: tuple[int, ...] = ()
    """lines overloaded before and not after"""
    new_overloads: tuple[int, ...] = ()
    """lines overloaded after and not before"""
    overloads_after: tuple[int, ...] = ()
    rho_after: np.ndarray | None = field(default=None, compare=False, repr=False)
    """every line's rho after the step; None when it cannot be used"""

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def illegal(self) -> bool:
        return self.failure is Failure.ILLEGAL

    @property
    def game_over(self) -> bool:
        """The step ends in a failed grid or a simulation error: what the console calls a game
        over in simulation."""
        return self.failed and not self.illegal

    @property
    def error(self) -> str:
        """The failure in its wording, with grid2op's reason ("" when the step can be used)."""
        if self.failure is None:
            return ""
        return f"{self.failure.value}: {self.reason}" if self.reason else self.failure.value


def outcome_of(simulated: Simulated, rho_before: np.ndarray) -> Outcome:
    """``simulated`` read against the rho of the state it starts from (``rho_before``)."""
    before = np.asarray(rho_before, dtype=float)
    max_before = float(np.max(before))
    why = failure(simulated)
    if why is not None:
        return Outcome(max_before, failure=why, reason=exception_text(simulated.info))
    rho = np.asarray(simulated.rho)
    now, then = before >= OVERLOAD, rho >= OVERLOAD
    return Outcome(
        max_before,
        max_rho_after=float(np.max(rho)),
        reward=float(simulated.reward),
        lines_relieved=_lines(now & ~then),
        new_overloads=_lines(~now & then),
        overloads_after=_lines(then),
        rho_after=rho,
    )


def _lines(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.flatnonzero(mask))
