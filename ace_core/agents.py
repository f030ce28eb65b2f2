"""grid2op agents: do-nothing, reconnect, greedy expert and the trained SAC/ACE policy.

All are ``grid2op.Agent.BaseAgent``s, so grid2op's Runner evaluates them and writes EpisodeData.
``load_agent(spec, env)`` builds one from a spec string:

- ``do-nothing``;
- ``reconnect``: reconnects a disconnected line as soon as its cooldown allows, else does nothing;
- ``greedy``, ``greedy:BUDGET`` or ``greedy:key=value,...``: the expert of :mod:`ace_core.expert`
  (reconnect first; when max rho reaches the threshold, every legal topology of the substations at
  both ends of the most loaded lines, simulated in one batch, at most BUDGET candidates, default
  3,000; the lowest simulated max rho wins);
- ``sac:PATH``: the policy of a training run (its directory or checkpoint file), acting when max
  rho reaches its threshold and reconnecting or doing nothing otherwise; a topology action equal
  to the current topology (a no-op in disguise) is played as do-nothing;
- ``...:act=R`` (``sac``, ``sac-critic`` and ``sac-checked``): the policy acts from max rho R
  instead of its run's training threshold (``rho_threshold``), reconnecting or doing nothing below it: a policy
  that harms a grid doing nothing would hold acts less, and a checked one simulates less;
- ``sac-critic:PATH`` or ``sac-critic:PATH:K``: the same policy with no simulation, judged by its
  own critics: among its K most likely actions (default 1) and reconnect-or-nothing, the one with
  the highest ``min(Q1, Q2)`` is played (reconnect-or-nothing on a tie). With K = 1 the policy
  acts only where its critics value its choice above leaving the grid as it is. A policy whose
  critics RL never updated (a clone) is refused;
- ``sac-checked:PATH`` or ``sac-checked:PATH:K``: the same policy, but its K most likely actions
  (default 10) are simulated one step ahead with reconnect-or-nothing, and the one with the lowest
  simulated max rho is played: what an operator sees as recommendations;
- ``sac-checked:PATH:K:stop=R``: the same candidates simulated one at a time, reconnect-or-nothing
  first and then the policy's in its order, stopping at the first whose simulated max rho is below
  R (the best so far is played when none is): the L2RPN winners' "first safe action", which
  spends one simulation on most stressed steps instead of K + 1;
- ``sac-checked:PATH:K:stop=R:expert``: the same, and when none of the K + 1 is below R the
  expert's search (``greedy``'s defaults) goes on from there, skipping what was already simulated:
  the policy's few candidates on most steps, the wide search on the hardest;
- ``...:critic``: the policy's candidates are simulated in the order its critics value them
  (``min(Q1, Q2)``, as ``sac-critic`` plays) instead of the policy's, so that with a stop the
  first safe one may come sooner;
- ``...:revert`` (with or without a stop): on calm steps, a split substation goes back to the
  reference topology when that keeps max rho below the expert's ``safe`` (the expert's step 4),
  which the policy, taught only on stressed steps, never does.

Every agent counts its *decisions* (steps where max rho reached its threshold) and, among them,
its *real actions* (an action that changes the grid); evaluation reports the share.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from grid2op.Agent import BaseAgent

from ace_core.checkpoint import check_same_space, load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import AgentSpecError
from ace_core.expert import EXPERT_SETTINGS, Expert, ExpertConfig, max_rho, parse_expert_spec
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.candidates import disguised_noops, near_loaded_lines, real_action
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.simulate import simulate_many, simulate_rho
from ace_core.rl.sac import SAC

AGENT_SPECS = (
    "do-nothing",
    "reconnect",
    "greedy[:BUDGET]",
    "greedy:key=value,...",
    "sac:RUN_DIR[:act=R]",
    "sac-critic:RUN_DIR[:K][:act=R]",
    "sac-checked:RUN_DIR[:K][:stop=R][:act=R][:expert][:revert][:critic]",
)
DEFAULT_CHECKED_K = 10
DEPLOYED_CHECK = "50:stop=0.95"
"""how the deployed policy is checked (``sac-checked:RUN:<this>``) on a grid not listed below"""
DEPLOYED_CHECK_BY_GRID = {"l2rpn_neurips_2020_track1": "50:stop=0.9:act=0.95"}
"""grids whose validation days chose another check: on the 36-bus grid stopping at 0.9 held
0.989 of the bundled validation day where 0.95 held 0.944, and on its 18 grown validation days
acting from max rho 0.95 held 0.964 with 0.30 simulations per step where acting from the run's
0.9 held 0.960 with 0.40 (docs/results-imitation.md)"""
DEPLOYED_PLAIN_BY_GRID = {"l2rpn_neurips_2020_track1": "act=1.0"}
"""grids whose validation days chose when the plain policy (no simulation) acts: on the 36-bus
grid's 18 grown validation days, from max rho 1.0 it held 0.927 where from the run's 0.9 it held
0.885 (do-nothing 0.901; docs/results-imitation.md)"""
DEFAULT_GREEDY_BUDGET = ExpertConfig.budget


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
        self.stats: dict = {
            "decision_seconds": [],
            "simulate_calls": 0,
            "steps": 0,
            "decisions": 0,
            "real_actions": 0,
            "folded_noops": 0,
        }

    @property
    def decision_seconds(self) -> list[float]:
        return self.stats["decision_seconds"]

    @property
    def simulate_calls(self) -> int:
        return self.stats["simulate_calls"]

    def count_decision(self, stressed: bool, action: int) -> None:
        """Count a step where the agent was asked to decide, and whether it changed the grid."""
        if stressed:
            self.stats["decisions"] += 1
            self.stats["real_actions"] += int(action != 0)

    def act(self, observation, reward, done=False):
        start = time.perf_counter()
        self.stats["steps"] += 1
        index = self.choose(observation)
        self.decision_seconds.append(time.perf_counter() - start)
        return self.space.to_grid2op(index, self.action_space)

    def choose(self, obs) -> int:
        raise NotImplementedError


class DoNothing(TimedAgent):
    def choose(self, obs) -> int:
        self.count_decision(obs.rho.max() >= 0.9, 0)
        return 0


class Reconnect(TimedAgent):
    def choose(self, obs) -> int:
        action = reconnect_or_nothing(obs, self.space)
        self.count_decision(obs.rho.max() >= 0.9, action)
        return action


def greedy_candidates(obs, space: ActionSpace, budget: int) -> list[int]:
    """Legal reconnections, then topologies at both ends of the 3 most loaded lines (closest to the
    current configuration first, round-robin over the substations), no-ops excluded, at most
    ``budget`` in all (see :mod:`ace_core.grid.candidates`)."""
    noop = disguised_noops(obs, space)
    return [i for i in near_loaded_lines(obs, space, 3) if not noop[i]][:budget]


def best_simulated(obs, space: ActionSpace, g2op_space, candidates: list[int]) -> tuple[int, float]:
    """(action, simulated max rho) of the candidate with the lowest simulated max rho; the first
    candidate wins ties, so put the default (reconnect-or-nothing) first."""
    outcomes = simulate_many(obs, [space.to_grid2op(index, g2op_space) for index in candidates])
    scores = [max_rho(outcome) for outcome in outcomes]
    best = int(np.argmin(scores))
    return candidates[best], scores[best]


def greedy_search(
    obs, space: ActionSpace, g2op_space, budget: int, extra: Sequence[int] = ()
) -> tuple[int, float, int]:
    """(best action, its simulated max rho, simulate calls) among the greedy candidates and
    ``extra`` ones (e.g. a policy's most likely actions), starting from reconnect-or-nothing so
    that only an improvement is played. The budgeted search of recommendations and of the
    trainer's teacher; the expert agent searches wider (:mod:`ace_core.expert`)."""
    default = reconnect_or_nothing(obs, space)
    candidates = list(dict.fromkeys([default, *extra, *greedy_candidates(obs, space, budget)]))
    best, best_rho = best_simulated(obs, space, g2op_space, candidates)
    return best, best_rho, len(candidates)


class Greedy(TimedAgent):
    """The simulation-based expert (:class:`ace_core.expert.Expert`): reconnect first, and when
    stressed, the best of a wide batched search by simulated max rho."""

    def __init__(
        self,
        env,
        space: ActionSpace,
        budget: int | None = None,
        rho_threshold: float | None = None,
        config: ExpertConfig | None = None,
    ):
        super().__init__(env, space)
        config = config or ExpertConfig()
        overrides = {"budget": budget, "threshold": rho_threshold}
        config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})
        self.expert = Expert.from_config(space, env.action_space, config)
        self.rho_threshold = config.threshold
        self.stats["contingency_calls"] = 0  # N-1 screenings of candidates (greedy:n1=K)

    def reset(self, obs) -> None:
        self.expert.played.clear()  # what the search learns stays within an episode

    def choose(self, obs) -> int:
        search = self.expert.search(obs)
        self.stats["simulate_calls"] += len(search.candidates) + search.screened
        self.stats["contingency_calls"] += search.screened
        self.count_decision(search.stressed, search.action)
        return search.action


class SacAgent(TimedAgent):
    def __init__(self, env, space: ActionSpace, sac: SAC, features: FeatureBuilder, rho_threshold: float):
        super().__init__(env, space)
        self.sac = sac
        self.features = features
        self.rho_threshold = rho_threshold

    def choose(self, obs) -> int:
        if obs.rho.max() < self.rho_threshold:
            return reconnect_or_nothing(obs, self.space)
        return self.real(obs, self.sac.act(self.features(obs), self.space.top_mask(obs), None))

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
        default = reconnect_or_nothing(obs, self.space)
        if obs.rho.max() < self.rho_threshold:
            return default
        features, candidates = self.candidates(obs, default, self.k)
        action = candidates[int(np.argmax(self.sac.critic_values(features, candidates)))]
        self.count_decision(True, action)
        return action


def parse_k(kind: str, argument: str, default: int) -> tuple[str, int]:
    """``(path, K)`` from ``PATH[:K]``; a K that is not a positive integer is refused."""
    head, _, tail = argument.rpartition(":")
    if not (head and tail.lstrip("-").isdigit()):
        return argument, default
    if int(tail) < 1:
        raise AgentSpecError(f"{kind} K {tail!r} must be a positive integer, e.g. {kind}:runs/a:10")
    return head, int(tail)


class CheckedSacAgent(SacAgent):
    """The policy's top-k, checked by simulation against reconnect-or-nothing: all of them in one
    batch (the lowest simulated max rho wins), or with ``stop`` one at a time until one's simulated
    max rho is below ``stop``. With an ``expert`` as well, a step where none is below ``stop`` goes
    on with that expert's search (the candidates already simulated are not simulated again), and
    the best of everything simulated by the expert's order is played. With a ``reverter``, calm
    steps are the expert's: back to the reference topology when it is safe. With ``critic_order``
    the policy's candidates are tried in the order its critics value them."""

    def __init__(
        self,
        env,
        space,
        sac,
        features,
        rho_threshold: float,
        k: int = DEFAULT_CHECKED_K,
        stop: float | None = None,
        expert: Expert | None = None,
        reverter: Expert | None = None,
        critic_order: bool = False,
    ):
        super().__init__(env, space, sac, features, rho_threshold)
        self.k = k
        self.critic_order = critic_order
        self.stop = stop
        self.expert = expert
        self.reverter = reverter
        self.stats["expert_steps"] = 0  # stressed steps handed to the expert (fallback)

    def reset(self, obs) -> None:
        if self.expert is not None:
            self.expert.played.clear()  # what the search learns stays within an episode

    def choose(self, obs) -> int:
        default = reconnect_or_nothing(obs, self.space)
        if obs.rho.max() < self.rho_threshold:
            if self.reverter is None:
                return default
            calm = self.reverter.search(obs)  # back to the reference topology when it is safe
            self.stats["simulate_calls"] += len(calm.candidates)
            return calm.action
        features, candidates = self.candidates(obs, default, self.k)
        if self.critic_order and len(candidates) > 2:
            values = self.sac.critic_values(features, candidates[1:])
            candidates = [default] + [candidates[1 + i] for i in np.argsort(-values, kind="stable")]
        if self.stop is None:
            self.stats["simulate_calls"] += len(candidates)
            action = best_simulated(obs, self.space, self.action_space, candidates)[0]
        else:
            tried = self.first_safe(obs, candidates)
            action = min(tried, key=tried.get)  # dicts keep order: the earlier candidate wins ties
            if self.expert is not None and tried[action] >= self.stop:
                action = self.expert_search(obs, tried)
        self.count_decision(True, action)
        return action

    def first_safe(self, obs, candidates: list[int]) -> dict[int, float]:
        """Simulated max rho of the candidates, in order, up to the first below ``stop``."""
        tried: dict[int, float] = {}
        for index in candidates:
            self.stats["simulate_calls"] += 1
            tried[index] = max_rho(simulate_rho(obs, self.space.to_grid2op(index, self.action_space)))
            if tried[index] < self.stop:
                break
        return tried

    def expert_search(self, obs, tried: dict[int, float]) -> int:
        """The expert's pick among its own candidates and those already ``tried``."""
        search = self.expert.search(obs, known=tried)
        self.stats["expert_steps"] += 1
        self.stats["simulate_calls"] += len(search.candidates) - len(tried) + search.screened
        return search.action


CHECKED_FLAGS = ("expert", "revert", "critic")


def split_act(kind: str, argument: str) -> tuple[str, float | None]:
    """``(the rest of the spec, R)`` from a spec with an ``act=R`` part after its path (``None``
    without one: the run's own threshold); R must be a positive max rho."""
    path, *parts = argument.split(":")
    acts = [part for part in parts if part.startswith("act=")]
    if not acts:
        return argument, None
    try:
        act = float(acts[-1].removeprefix("act="))
    except ValueError:
        act = None
    if len(acts) > 1 or act is None or not (0 < act < float("inf")):
        raise AgentSpecError(
            f"{kind} {':'.join(acts)!r}: one act=R with R a positive max rho, "
            f"e.g. {kind}:runs/a:act=0.95 (the policy then acts from max rho 0.95)"
        )
    return ":".join([path, *(part for part in parts if not part.startswith("act="))]), act


@dataclasses.dataclass(frozen=True)
class CheckedSpec:
    """What ``sac-checked:RUN_DIR[:K][:stop=R][:expert][:revert][:critic]`` names."""

    path: str
    k: int = DEFAULT_CHECKED_K
    stop: float | None = None
    expert: bool = False
    revert: bool = False
    critic: bool = False


def parse_checked_spec(argument: str) -> CheckedSpec:
    """The parts of ``sac-checked``'s ``RUN_DIR[:K][:stop=R][:expert][:revert][:critic]``."""
    path, k, stop, flags = argument, DEFAULT_CHECKED_K, None, set()
    head, _, tail = path.rpartition(":")
    while head and tail in CHECKED_FLAGS:
        path, flags = head, flags | {tail}
        head, _, tail = path.rpartition(":")
    if head and tail.startswith("stop="):
        try:
            stop = float(tail.removeprefix("stop="))
        except ValueError:
            stop = None
        if stop is None or not (0 < stop < float("inf")):
            raise AgentSpecError(
                f"sac-checked stop {tail!r} must be a positive max rho, e.g. sac-checked:runs/a:10:stop=1.0"
            )
        path = head
    if "expert" in flags and stop is None:
        raise AgentSpecError(
            "sac-checked's expert fallback needs a stop (it searches when no candidate is below it), "
            "e.g. sac-checked:runs/a:50:stop=0.95:expert"
        )
    path, k = parse_k("sac-checked", path, k)
    return CheckedSpec(path, k, stop, "expert" in flags, "revert" in flags, "critic" in flags)


def deployed_check(env_name: str) -> str:
    """The ``K[:stop=R][:act=R]`` part of ``sac-checked`` that this grid's policy is deployed with."""
    return DEPLOYED_CHECK_BY_GRID.get(env_name, DEPLOYED_CHECK)


def deployed_plain(env_name: str) -> str:
    """The options of ``sac`` (``act=R``, or nothing: the run's threshold) that this grid's plain
    policy is shown with."""
    return DEPLOYED_PLAIN_BY_GRID.get(env_name, "")


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


def load_agent(spec: str, env, space: ActionSpace | None = None) -> TimedAgent:
    """Build the agent a spec names; see the module docstring for the accepted specs."""
    space = space or build_action_space(env)
    kind, _, argument = spec.partition(":")
    if kind == "do-nothing" and not argument:
        return DoNothing(env, space)
    if kind == "reconnect" and not argument:
        return Reconnect(env, space)
    if kind == "greedy":
        try:
            config = parse_expert_spec(argument)
        except AgentSpecError as exc:
            raise AgentSpecError(f"{exc} (defaults: {EXPERT_SETTINGS})") from None
        return Greedy(env, space, config=config)
    if kind in ("sac", "sac-critic", "sac-checked") and argument:
        argument, act = split_act(kind, argument)
    if kind == "sac" and argument:
        sac, space, features, config = load_sac(Path(argument), env, space)
        return SacAgent(env, space, sac, features, config.rho_threshold if act is None else act)
    if kind == "sac-critic" and argument:
        path, k = parse_k("sac-critic", argument, 1)
        sac, space, features, config = load_sac(Path(path), env, space)
        refuse_untrained_critics(sac, spec, path)
        return CriticSacAgent(env, space, sac, features, config.rho_threshold if act is None else act, k)
    if kind == "sac-checked" and argument:
        checked = parse_checked_spec(argument)
        sac, space, features, config = load_sac(Path(checked.path), env, space)
        if checked.critic:
            refuse_untrained_critics(sac, spec, checked.path)
        threshold = config.rho_threshold if act is None else act
        expert = None
        if checked.expert or checked.revert:
            expert = Expert.from_config(space, env.action_space, ExpertConfig(threshold=threshold))
        return CheckedSacAgent(
            env,
            space,
            sac,
            features,
            threshold,
            checked.k,
            checked.stop,
            expert if checked.expert else None,
            expert if checked.revert else None,
            checked.critic,
        )
    raise AgentSpecError(f"unknown agent spec {spec!r}; accepted: {', '.join(AGENT_SPECS)}")
