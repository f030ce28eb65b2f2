"""grid2op agents: do-nothing, reconnect, greedy expert and the trained SAC/ACE policy.

All are ``grid2op.Agent.BaseAgent``s, so grid2op's Runner evaluates them and writes EpisodeData.
``load_agent(spec, env)`` builds one from a spec string:

- ``do-nothing``;
- ``reconnect``: reconnects a disconnected line as soon as its cooldown allows, else does nothing;
- ``greedy`` or ``greedy:BUDGET``: when max rho reaches the threshold, simulates up to BUDGET
  candidate actions (reconnections, then topologies at the substations of the most loaded lines)
  and plays the one with the lowest simulated max rho if it beats doing nothing;
- ``sac:PATH``: the policy of a training run (its directory or checkpoint file), acting when max
  rho reaches its threshold and reconnecting or doing nothing otherwise;
- ``sac-checked:PATH`` or ``sac-checked:PATH:K``: the same policy, but its K most likely actions
  (default 10) are simulated one step ahead with reconnect-or-nothing, and the one with the lowest
  simulated max rho is played: what an operator sees as recommendations.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from grid2op.Agent import BaseAgent

from ace_core.checkpoint import check_same_space, load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import AgentSpecError
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.simulate import Simulated, max_rho_after, simulate_many
from ace_core.rl.sac import SAC

AGENT_SPECS = ("do-nothing", "reconnect", "greedy[:BUDGET]", "sac:RUN_DIR", "sac-checked:RUN_DIR[:K]")
DEFAULT_CHECKED_K = 10
DEFAULT_GREEDY_BUDGET = 64


def reconnect_or_nothing(obs, space: ActionSpace) -> int:
    """Reconnect the first disconnected line whose cooldown is over; otherwise do nothing."""
    ready = np.flatnonzero(~obs.line_status & (obs.time_before_cooldown_line == 0))
    return 1 + int(ready[0]) if len(ready) else 0


class TimedAgent(BaseAgent):
    """Keeps per-step decision times and simulate counts for evaluation reports.

    The Runner shallow-copies the agent for every episode, so the counters live in one shared
    dict rather than in attributes the copies would rebind.
    """

    def __init__(self, env, space: ActionSpace) -> None:
        super().__init__(env.action_space)
        self.space = space
        self.stats: dict = {"decision_seconds": [], "simulate_calls": 0}

    @property
    def decision_seconds(self) -> list[float]:
        return self.stats["decision_seconds"]

    @property
    def simulate_calls(self) -> int:
        return self.stats["simulate_calls"]

    def act(self, observation, reward, done=False):
        start = time.perf_counter()
        index = self.choose(observation)
        self.decision_seconds.append(time.perf_counter() - start)
        return self.space.to_grid2op(index, self.action_space)

    def choose(self, obs) -> int:
        raise NotImplementedError


class DoNothing(TimedAgent):
    def choose(self, obs) -> int:
        return 0


class Reconnect(TimedAgent):
    def choose(self, obs) -> int:
        return reconnect_or_nothing(obs, self.space)


def greedy_candidates(obs, space: ActionSpace, budget: int) -> list[int]:
    """Legal reconnections, then topologies at both ends of the 3 most loaded lines, at most
    ``budget`` in all, spread evenly over each substation's configurations."""
    mask = space.action_mask(obs)
    out = [i for i in range(1, 1 + space.n_line) if mask[i]][:budget]
    subs = []
    for line in np.argsort(-obs.rho)[:3]:
        subs += [int(space.line_or_sub[line]), int(space.line_ex_sub[line])]
    subs = [s for s in dict.fromkeys(subs) if s in space.topo_sub_set]
    per_sub = max(1, -(-(budget - len(out)) // max(len(subs), 1)))  # ceil: fill the budget
    for sub in subs:
        rows = space.first_topology + np.flatnonzero(space.topo_sub == sub)
        rows = rows[mask[rows]]
        if len(rows) > per_sub:
            rows = rows[np.linspace(0, len(rows) - 1, per_sub).astype(np.int64)]
        out.extend(int(i) for i in rows)
    return out[:budget]


def _max_rho(outcome: Simulated) -> float:
    """Max rho one step after an action; infinity for a game over or an illegal action."""
    max_rho = max_rho_after(outcome)
    return float("inf") if max_rho is None else max_rho


def best_simulated(obs, space: ActionSpace, g2op_space, candidates: list[int]) -> tuple[int, float]:
    """(action, simulated max rho) of the candidate with the lowest simulated max rho; the first
    candidate wins ties, so put the default (reconnect-or-nothing) first."""
    outcomes = simulate_many(obs, [space.to_grid2op(index, g2op_space) for index in candidates])
    scores = [_max_rho(outcome) for outcome in outcomes]
    best = int(np.argmin(scores))
    return candidates[best], scores[best]


def greedy_search(
    obs, space: ActionSpace, g2op_space, budget: int, extra: Sequence[int] = ()
) -> tuple[int, float, int]:
    """(best action, its simulated max rho, simulate calls) among the greedy candidates and
    ``extra`` ones (e.g. a policy's most likely actions), starting from reconnect-or-nothing so
    that only an improvement is played."""
    default = reconnect_or_nothing(obs, space)
    candidates = list(dict.fromkeys([default, *extra, *greedy_candidates(obs, space, budget)]))
    best, best_rho = best_simulated(obs, space, g2op_space, candidates)
    return best, best_rho, len(candidates)


class Greedy(TimedAgent):
    """Simulation-based expert, budgeted: the baseline every L2RPN write-up compares against."""

    def __init__(
        self, env, space: ActionSpace, budget: int = DEFAULT_GREEDY_BUDGET, rho_threshold: float = 0.9
    ):
        super().__init__(env, space)
        self.budget = budget
        self.rho_threshold = rho_threshold

    def choose(self, obs) -> int:
        if obs.rho.max() < self.rho_threshold:
            return reconnect_or_nothing(obs, self.space)
        best, _, calls = greedy_search(obs, self.space, self.action_space, self.budget)
        self.stats["simulate_calls"] += calls
        return best


class SacAgent(TimedAgent):
    def __init__(self, env, space: ActionSpace, sac: SAC, features: FeatureBuilder, rho_threshold: float):
        super().__init__(env, space)
        self.sac = sac
        self.features = features
        self.rho_threshold = rho_threshold

    def choose(self, obs) -> int:
        if obs.rho.max() < self.rho_threshold:
            return reconnect_or_nothing(obs, self.space)
        return self.sac.act(self.features(obs), self.space.top_mask(obs), None)


class CheckedSacAgent(SacAgent):
    """The policy's top-k, checked by simulation against reconnect-or-nothing."""

    def __init__(self, env, space, sac, features, rho_threshold: float, k: int = DEFAULT_CHECKED_K):
        super().__init__(env, space, sac, features, rho_threshold)
        self.k = k

    def choose(self, obs) -> int:
        default = reconnect_or_nothing(obs, self.space)
        if obs.rho.max() < self.rho_threshold:
            return default
        ranked = self.sac.policy(self.features(obs), self.space.top_mask(obs)).top_k(self.k)
        candidates = [default] + [index for index, _ in ranked if index != default]
        self.stats["simulate_calls"] += len(candidates)
        return best_simulated(obs, self.space, self.action_space, candidates)[0]


def load_sac(
    path: Path, env, space: ActionSpace | None = None
) -> tuple[SAC, ActionSpace, FeatureBuilder, TrainConfig]:
    """The trained policy of a run, refusing a checkpoint made on another action space."""
    state = load_checkpoint(path)
    space = space or build_action_space(env)
    if state.get("subset") is not None and space.subset is None:
        space = space.restrict(space.first_topology + np.asarray(state["subset"]))
    check_same_space(state, space.fingerprint(), str(path))
    config = TrainConfig.from_dict(state["config"])
    features = FeatureBuilder.for_policy(env, state)
    sac = SAC(features.size, space, config.sac)
    with torch.no_grad():
        sac.load_state_dict(state["sac"])
    return sac, space, features, config


def load_agent(spec: str, env, space: ActionSpace | None = None) -> TimedAgent:
    """Build the agent a spec names; see the module docstring for the accepted specs."""
    space = space or build_action_space(env)
    kind, _, argument = spec.partition(":")
    if kind == "do-nothing" and not argument:
        return DoNothing(env, space)
    if kind == "reconnect" and not argument:
        return Reconnect(env, space)
    if kind == "greedy":
        if argument and not (argument.isdigit() and int(argument) > 0):
            raise AgentSpecError(f"greedy budget {argument!r} must be a positive integer, e.g. greedy:64")
        return Greedy(env, space, int(argument) if argument else DEFAULT_GREEDY_BUDGET)
    if kind == "sac" and argument:
        sac, space, features, config = load_sac(Path(argument), env, space)
        return SacAgent(env, space, sac, features, config.rho_threshold)
    if kind == "sac-checked" and argument:
        head, _, tail = argument.rpartition(":")
        path, k = (head, tail) if head and tail.isdigit() else (argument, "")
        if k and int(k) < 1:
            raise AgentSpecError(
                f"sac-checked K {k!r} must be a positive integer, e.g. sac-checked:runs/a:10"
            )
        sac, space, features, config = load_sac(Path(path), env, space)
        return CheckedSacAgent(
            env, space, sac, features, config.rho_threshold, int(k) if k else DEFAULT_CHECKED_K
        )
    raise AgentSpecError(f"unknown agent spec {spec!r}; accepted: {', '.join(AGENT_SPECS)}")
