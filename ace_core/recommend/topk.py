"""The earlier fast path of the live console: the policy's top-k actions, each simulated one step
ahead with ``obs.simulate``, and the greedy expert's best as a fallback when none clears an
overload. No N-1, no look-ahead, no comparison with doing nothing: :mod:`ace_core.recommend.pipeline`'s
pipeline supersedes it; it stays until its callers (the live console, ``ace_core.evaluation.bench``) move.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ace_core.agents.greedy import greedy_search
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.simulate import Simulated, simulate_many, simulate_rho
from ace_core.rl.sac import SAC


@dataclass(frozen=True)
class Recommendation:
    action_index: int
    description: str
    confidence: float
    """the policy's probability of this action (0 for the greedy fallback)"""
    source: str
    """``policy`` or ``greedy``"""
    max_rho_before: float
    max_rho_after: float | None
    """simulated max rho one step ahead; None when the simulation failed (game over, illegal)"""
    reward_after: float | None
    lines_relieved: tuple[int, ...]
    """lines overloaded now and not after"""
    new_overloads: tuple[int, ...]
    """lines not overloaded now and overloaded after"""
    error: str = ""


@dataclass(frozen=True)
class SimulatedOutcome:
    max_rho: float | None
    reward: float | None
    rho: np.ndarray | None
    error: str


def simulate(obs, space: ActionSpace, g2op_space, index: int) -> SimulatedOutcome:
    """One step ahead with grid2op's simulator."""
    return outcome_of(simulate_rho(obs, space.to_grid2op(index, g2op_space)))


def outcome_of(simulated: Simulated) -> SimulatedOutcome:
    rho, reward, done, info = simulated
    if info.get("is_illegal"):
        return SimulatedOutcome(None, None, None, "illegal: " + _first(info.get("exception")))
    if done or info.get("exception"):
        return SimulatedOutcome(None, None, None, "game over: " + _first(info.get("exception")))
    return SimulatedOutcome(float(rho.max()), reward, rho, "")


def _first(exceptions) -> str:
    if not exceptions:
        return "the grid could not be solved"
    first = exceptions[0] if isinstance(exceptions, list | tuple) else exceptions
    return str(first).splitlines()[0][:200]


def recommend(
    obs,
    sac: SAC,
    space: ActionSpace,
    features: FeatureBuilder,
    g2op_space,
    k: int = 3,
    greedy_budget: int = 32,
) -> tuple[list[Recommendation], dict[str, float]]:
    """Top-k recommendations with their simulated effect, and timings in ms. When none of them
    clears an overload, the greedy expert's best of ``greedy_budget`` candidates is added (0: never)."""
    started = time.perf_counter()
    policy = sac.policy(features(obs), space.top_mask(obs))
    ranked = policy.top_k(k)
    ranked_ms = (time.perf_counter() - started) * 1000
    before = np.asarray(obs.rho)
    outcomes = simulate_many(obs, [space.to_grid2op(index, g2op_space) for index, _ in ranked])
    out = [
        _card(space, index, prob, "policy", before, outcome_of(outcome))
        for (index, prob), outcome in zip(ranked, outcomes)
    ]
    cleared = any(r.max_rho_after is not None and r.max_rho_after < 1.0 for r in out)
    if greedy_budget > 0 and not cleared and before.max() >= 1.0:
        best, _, _ = greedy_search(obs, space, g2op_space, greedy_budget)
        if best not in {r.action_index for r in out}:
            out.append(_card(space, best, 0.0, "greedy", before, simulate(obs, space, g2op_space, best)))
    total_ms = (time.perf_counter() - started) * 1000
    return out, {"policy_ms": ranked_ms, "total_ms": total_ms}


def _card(space, index, prob, source, before, outcome: SimulatedOutcome) -> Recommendation:
    if outcome.rho is None:
        relieved, new = (), ()
    else:
        relieved = tuple(int(i) for i in np.flatnonzero((before >= 1.0) & (outcome.rho < 1.0)))
        new = tuple(int(i) for i in np.flatnonzero((before < 1.0) & (outcome.rho >= 1.0)))
    return Recommendation(
        action_index=int(index),
        description=space.describe(index),
        confidence=float(prob),
        source=source,
        max_rho_before=float(before.max()),
        max_rho_after=outcome.max_rho,
        reward_after=outcome.reward,
        lines_relieved=relieved,
        new_overloads=new,
        error=outcome.error,
    )
