"""grid2op agents: do-nothing, reconnect, greedy expert and the trained SAC/ACE policy.

All are ``grid2op.Agent.BaseAgent``s, so grid2op's Runner evaluates them and writes EpisodeData.
``load_agent(spec, env)`` builds one from a spec string:

- ``do-nothing``;
- ``reconnect``: reconnects a disconnected line as soon as its cooldown allows, else does nothing;
- ``greedy``, ``greedy:BUDGET`` or ``greedy:key=value,...``: the expert of :mod:`ace_core.agents.expert`
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
from pathlib import Path

from ace_core.agents.baselines import DoNothing, Reconnect, TimedAgent
from ace_core.agents.expert import Expert
from ace_core.agents.greedy import Greedy
from ace_core.agents.sac import (
    DEFAULT_CHECKED_K,
    CheckedSacAgent,
    CriticSacAgent,
    SacAgent,
    load_sac,
    refuse_untrained_critics,
)
from ace_core.config.expert import EXPERT_SETTINGS, ExpertConfig, parse_expert_spec
from ace_core.errors import AgentSpecError
from ace_core.grid.action_space import ActionSpace, build_action_space

AGENT_SPECS = (
    "do-nothing",
    "reconnect",
    "greedy[:BUDGET]",
    "greedy:key=value,...",
    "sac:RUN_DIR[:act=R]",
    "sac-critic:RUN_DIR[:K][:act=R]",
    "sac-checked:RUN_DIR[:K][:stop=R][:act=R][:expert][:revert][:critic]",
)


def parse_k(kind: str, argument: str, default: int) -> tuple[str, int]:
    """``(path, K)`` from ``PATH[:K]``; a K that is not a positive integer is refused."""
    head, _, tail = argument.rpartition(":")
    if not (head and tail.lstrip("-").isdigit()):
        return argument, default
    if int(tail) < 1:
        raise AgentSpecError(f"{kind} K {tail!r} must be a positive integer, e.g. {kind}:runs/a:10")
    return head, int(tail)


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
