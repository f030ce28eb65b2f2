"""The trained SAC/ACE policy as a grid2op agent: plain, judged by its own critics, or checked by simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ace_core.agents.baselines import TimedAgent
from ace_core.agents.expert import Expert
from ace_core.agents.expert_order import Search, max_rho
from ace_core.agents.greedy import best_simulated
from ace_core.checkpoint import check_same_space, load_checkpoint, with_policy_moves
from ace_core.config import TrainConfig
from ace_core.errors import AgentSpecError
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.candidates import disguised_noops, real_action, reconnect_or_nothing
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.flex.proposals import release_move
from ace_core.grid.outcome import OVERLOAD
from ace_core.grid.simulate import simulate_rho
from ace_core.rl.sac import SAC

RELEASE_BELOW = 0.85
"""a policy that plays continuous moves (a space :meth:`~ace_core.grid.action_space.ActionSpace.with_moves`)
releases those in force on steps whose max rho is below this (the release level the 36-bus
validation days chose for the expert's moves, ``docs/results-stress.md``)"""


def calm_release(obs, space: ActionSpace) -> FlexMove | None:
    """What a policy over ``space`` plays with reconnect-or-nothing on a calm step: the continuous
    moves in force released as far as one step allows, when the policy plays moves and max rho
    is below :data:`RELEASE_BELOW`; None otherwise (the agent and RL training alike)."""
    if space.moves and obs.rho.max() < RELEASE_BELOW:
        return release_move(obs)
    return None


class SacAgent(TimedAgent):
    def __init__(self, env, space: ActionSpace, sac: SAC, features: FeatureBuilder, rho_threshold: float):
        super().__init__(env, space)
        self.sac = sac
        self.features = features
        self.rho_threshold = rho_threshold

    def choose(self, obs) -> int:
        if obs.rho.max() < self.rho_threshold:
            return self.calm(obs)
        return self.real(obs, self.sac.act(self.features(obs), self.space.top_mask(obs), None))

    def calm(self, obs) -> int:
        """A calm step: reconnect or nothing, with :func:`calm_release`."""
        self.move = calm_release(obs, self.space)
        return reconnect_or_nothing(obs)

    def real(self, obs, action: int) -> int:
        """The action played for the policy's choice: a no-op in disguise becomes do-nothing."""
        played = real_action(obs, self.space, action)
        self.stats["folded_noops"] += int(played != action)
        self.count_decision(True, played)
        return played

    def candidates(self, obs, default: int, k: int) -> tuple[np.ndarray, list[int]]:
        """(features, ``default`` then the policy's ``k`` most likely actions in its order), the
        no-ops in disguise left out and counted."""
        features = self.features(obs)
        ranked = self.sac.policy(features, self.space.top_mask(obs)).top_k(k)
        noop = disguised_noops(obs, self.space)
        self.stats["folded_noops"] += sum(int(noop[index]) for index, _ in ranked)
        return features, [default] + [index for index, _ in ranked if index != default and not noop[index]]


class CriticSacAgent(SacAgent):
    """The policy's top-k and reconnect-or-nothing, judged by the policy's critics instead of a
    simulator: the highest ``min(Q1, Q2)`` is played, reconnect-or-nothing on a tie."""

    def __init__(self, env, space, sac, features, rho_threshold: float, k: int = 1):
        super().__init__(env, space, sac, features, rho_threshold)
        self.k = k

    def choose(self, obs) -> int:
        default = reconnect_or_nothing(obs)
        if obs.rho.max() < self.rho_threshold:
            return self.calm(obs)
        features, candidates = self.candidates(obs, default, self.k)
        action = candidates[int(np.argmax(self.sac.critic_values(features, candidates)))]
        self.count_decision(True, action)
        return action


class CheckedSacAgent(SacAgent):
    """The policy's top-k, checked by simulation against reconnect-or-nothing: all of them in one
    batch (the lowest simulated max rho wins), or with ``stop`` one at a time until one's simulated
    max rho is below ``stop``. With an ``expert`` as well, a step where none is below ``stop`` goes
    on with that expert's search (the candidates already simulated are not simulated again), and
    the best of everything simulated by the expert's order is played. With a ``reverter``, calm
    steps are the expert's: back to the reference topology when it is safe. With ``critic_order``
    the policy's candidates are tried in the order its critics value them; with ``policy_first``
    the policy's own choice is tried before reconnect-or-nothing; with ``steady``, while a line
    stays overloaded, the substation changed at the previous step is not changed again (no
    flip-flop between two splits, each best one step ahead, while the overload runs out its
    overflow allowance); with ``wary``, while a line is overloaded now, reconnect-or-nothing
    counts as no better than the state now, whatever its one-step forecast (a forecast that eases
    the load must not stop the check while the overload runs out its allowance). With an expert
    that goes beyond topology (``flex``), the net's
    continuous move is played with its pick, and the reverter releases moves in force on calm
    steps."""

    def __init__(
        self,
        env,
        space,
        sac,
        features,
        rho_threshold: float,
        k: int,
        stop: float | None = None,
        expert: Expert | None = None,
        reverter: Expert | None = None,
        critic_order: bool = False,
        policy_first: bool = False,
        steady: bool = False,
        wary: bool = False,
    ):
        super().__init__(env, space, sac, features, rho_threshold)
        self.k = k
        self.critic_order = critic_order
        self.policy_first = policy_first
        self.steady = steady
        self.wary = wary
        self.last_substation: int | None = None
        """the substation the previous step's action changed (None: no topology change)"""
        self.stop = stop
        self.expert = expert
        self.reverter = reverter
        self.stats["expert_steps"] = 0  # stressed steps handed to the expert (fallback)

    def reset(self, obs) -> None:
        self.last_substation = None
        for expert in {self.expert, self.reverter} - {None}:  # often one expert in both roles
            expert.reset()  # what the search learns stays within an episode

    def choose(self, obs) -> int:
        action = self._choose(obs)
        self.last_substation = self._substation(action)
        return action

    def _substation(self, index: int) -> int | None:
        return int(self.space.bits_of(index)[0]) if self.space.is_topology(index) else None

    def _held(self, obs) -> int | None:
        """With ``steady``: the substation not to change again now (changed at the previous step,
        and a line still overloaded)."""
        if self.steady and self.last_substation is not None and overloaded(obs):
            return self.last_substation
        return None

    def _choose(self, obs) -> int:
        default = reconnect_or_nothing(obs)
        if obs.rho.max() < self.rho_threshold:
            if self.reverter is None:
                return self.calm(obs)
            calm = self.reverter.search(obs)  # moves released, or back to bus 1, when it is safe
            self.stats["simulate_calls"] += calm.simulations
            self.move = calm.move
            return calm.action
        features, candidates = self.candidates(obs, default, self.k)
        if self.critic_order and len(candidates) > 2:
            values = self.sac.critic_values(features, candidates[1:])
            candidates = [default] + [candidates[1 + i] for i in np.argsort(-values, kind="stable")]
        if self.policy_first and len(candidates) > 1:
            candidates = [candidates[1], candidates[0], *candidates[2:]]
        held = self._held(obs)
        if held is not None:
            candidates = [c for c in candidates if self._substation(c) != held]
        if self.stop is None:
            self.stats["simulate_calls"] += len(candidates)
            action = best_simulated(obs, self.space, self.action_space, candidates)[0]
        else:
            wary_of = default if self.wary and overloaded(obs) else None
            tried = self.first_safe(obs, candidates, wary_of)
            action = min(tried, key=tried.get)  # dicts keep order: the earlier candidate wins ties
            if self.expert is not None and tried[action] >= self.stop:
                searched = self.expert_search(obs, tried)
                if held is None or self._substation(searched.action) != held:
                    action, self.move = searched.action, searched.move
        self.count_decision(True, action)
        return action

    def first_safe(self, obs, candidates: list[int], wary_of: int | None = None) -> dict[int, float]:
        """Simulated max rho of the candidates, in order, up to the first below ``stop``;
        ``wary_of`` (doing nothing while a line is overloaded) counts as no lower than max rho now."""
        tried: dict[int, float] = {}
        for index in candidates:
            self.stats["simulate_calls"] += 1
            tried[index] = max_rho(simulate_rho(obs, self.space.to_grid2op(index, self.action_space)))
            if index == wary_of:
                tried[index] = max(tried[index], float(obs.rho.max()))
            if tried[index] < self.stop:
                break
        return tried

    def expert_search(self, obs, tried: dict[int, float]) -> Search:
        """The expert's pick among its own candidates and those already ``tried``."""
        search = self.expert.search(obs, known=tried)
        self.stats["expert_steps"] += 1
        self.stats["simulate_calls"] += search.simulations - len(tried)
        return search


def overloaded(obs) -> bool:
    """A line is over its limit now (its overflow counter runs: left so, it trips)."""
    return bool(obs.rho.max() >= OVERLOAD)


def load_sac(
    path: Path, env, space: ActionSpace | None = None
) -> tuple[SAC, ActionSpace, FeatureBuilder, TrainConfig]:
    """The trained policy of a run, refusing a checkpoint made on another action space."""
    return sac_from_state(load_checkpoint(path), env, space, str(path))


def sac_from_state(
    state: dict, env, space: ActionSpace | None = None, where: str = "in memory"
) -> tuple[SAC, ActionSpace, FeatureBuilder, TrainConfig]:
    """The policy of a loaded checkpoint (:func:`load_sac` without the file: a mine's Ray workers
    get the state from the driver, not a path they may not see)."""
    space = space or build_action_space(env)
    if state.get("subset") is not None and space.subset is None:
        space = space.restrict(space.first_topology + np.asarray(state["subset"]))
    space = with_policy_moves(space, state)
    check_same_space(state, space.fingerprint(), where)
    config = TrainConfig.from_dict(state["config"])
    features = FeatureBuilder.for_policy(env, state)
    sac = SAC(features.size, space, config.sac)
    with torch.no_grad():
        sac.load_state_dict(state["sac"])
    return sac, space, features, config


def refuse_untrained_critics(sac: SAC, spec: str, path: str) -> None:
    """An agent that reads the critics needs critics RL has trained: a clone's, or a best.pt kept
    before the run's first update, are their random start."""
    if sac.updates == 0:
        raise AgentSpecError(
            f"{spec!r} reads the policy's critics, and the policy in {path} has none trained "
            "(0 RL updates: a clone, or a best.pt kept before RL's first update); "
            f"use sac:{path} or sac-checked:{path}, or a run whose best.pt comes after RL updates"
        )
