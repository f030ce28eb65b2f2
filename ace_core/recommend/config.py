"""The recommendation pipeline's settings (:class:`PipelineConfig`): how many candidates of each
source, how far the screening looks, and when pairs and continuous moves are tried. The pipeline
itself is :mod:`ace_core.recommend.pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ace_core.errors import ConfigError
from ace_core.grid.forecasts import DEFAULT_HORIZON, ForecastError
from ace_core.recommend.pairs import POOL


@dataclass(frozen=True)
class PipelineConfig:
    """How many candidates of each source, and how far the screening looks."""

    policy_k: int = 5
    """the policy's most likely actions considered"""
    expert_k: int = 4
    """the greedy expert's best simulated actions considered"""
    expert_budget: int = 16
    """candidates the expert simulates one step ahead to find its best ``expert_k``"""
    expert_n1: int = 0
    """when above ``expert_k``: the expert pool's best this many by max rho are screened for N-1
    and the ``expert_k`` kept are the first not worse than doing nothing by the safety order (N-1
    before max rho); otherwise the pool's best ``expert_k`` by max rho are kept and only those
    are screened"""
    horizon: int = DEFAULT_HORIZON
    """look-ahead steps (5 minutes each)"""
    look_ahead_top: int = 3
    """look-ahead for the best this many candidates (and always for doing nothing)"""
    contingencies: tuple[int | str, ...] | None = None
    """lines (ids or names) whose loss N-1 screens; None: every line"""
    pairs: int = 8
    """when no single move clears the grid's overloads: pairs of the best single moves tried, at
    most this many (:mod:`ace_core.recommend.pairs`); 0: none"""
    pair_pool: int = POOL
    """the best single moves the pairs are made of"""
    flex: int = 4
    """when no single move clears the grid's overloads: continuous moves (redispatch,
    curtailment, storage) tried, each alone and with the best single move
    (:mod:`ace_core.recommend.flex`); 0: none"""

    def __post_init__(self) -> None:
        for name in (
            "policy_k",
            "expert_k",
            "expert_budget",
            "expert_n1",
            "look_ahead_top",
            "pairs",
            "pair_pool",
            "flex",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a whole number >= 0")
        if not isinstance(self.horizon, int) or isinstance(self.horizon, bool) or self.horizon <= 0:
            raise ForecastError(
                f"look-ahead horizon {self.horizon!r} must be a positive number of steps, e.g. 12"
            )
