"""The spec strings that name grid2op agents: do-nothing, reconnect, greedy expert and the trained
SAC/ACE policy, read and checked here with neither torch nor grid2op.

All are ``grid2op.Agent.BaseAgent``s, so grid2op's Runner evaluates them and writes EpisodeData.
:func:`ace_core.agents.loading.load_agent` builds one from a spec string, read by
:meth:`AgentSpec.parse` (code that names an agent builds an :class:`AgentSpec` and writes it with
``str(spec)``):

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
- ``...:expert=N``: the same safety net with a budget: the expert simulates at most N candidates
  on such a step (its ``budget``; ``expert`` alone: greedy's 3,000);
- ``...:critic``: the policy's candidates are simulated in the order its critics value them
  (``min(Q1, Q2)``, as ``sac-critic`` plays) instead of the policy's, so that with a stop the
  first safe one may come sooner;
- ``...:policy`` (with a stop): the policy's own choice is simulated first, before
  reconnect-or-nothing, so that a preventive move the policy makes is played whenever it is
  safe, rather than doing nothing whenever doing nothing is;
- ``...:steady``: while a line stays overloaded, the substation the previous step changed is not
  changed again (the expert's pick too): no flip-flop between two splits that are each best one
  step ahead while the overload runs out its allowance;
- ``...:wary`` (with a stop): while a line is overloaded now (max rho at least 1, its overflow
  counter running), reconnect-or-nothing is not taken as safe on its one-step forecast alone: it
  counts as no better than the state now, so the policy's candidates are simulated too, and the
  expert's net searches when none is below the stop (the expert acts on such a step);
- ``...:revert`` (with or without a stop): on calm steps, a split substation goes back to the
  reference topology when that keeps max rho below the expert's ``safe`` (the expert's step 4),
  which the policy, taught only on stressed steps, never does;
- ``...:flex=K`` (with ``expert`` and ``revert``): the safety net goes beyond topology, as
  ``greedy:flex=K`` does: when its pick leaves max rho at the threshold, up to K redispatch,
  curtailment and storage moves are simulated alone and with it, and calm steps release the moves
  in force before putting substations back;
- ``...:flex=K:swap`` (with ``flex``): the net also tries each move in place of the moves in force,
  as ``greedy:flex=K,swap=1`` does; ``...:flex=K:exact``: its redispatch moves each target by the
  move's MW, as ``greedy:flex=K,exact=1`` does; ``...:flex=K:release=R``: the moves in force are
  released on any step below R (between the expert's ``safe`` and the net's threshold), not only on
  calm steps, as ``greedy:flex=K,release=R`` does.

Every agent counts its *decisions* (steps where max rho reached its threshold) and, among them,
its *real actions* (an action that changes the grid); evaluation reports the share.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ace_core.config.expert import EXPERT_SETTINGS, parse_expert_spec
from ace_core.errors import AgentSpecError

AGENT_SPECS = (
    "do-nothing",
    "reconnect",
    "greedy[:BUDGET]",
    "greedy:key=value,...",
    "sac:RUN_DIR[:act=R]",
    "sac-critic:RUN_DIR[:K][:act=R]",
    "sac-checked:RUN_DIR[:K][:stop=R][:act=R][:expert[=N]][:revert][:critic][:policy][:steady][:wary][:flex=K][:release=R][:swap][:exact]",
)
KINDS = ("do-nothing", "reconnect", "greedy", "sac", "sac-critic", "sac-checked")
POLICY_KINDS = ("sac", "sac-critic", "sac-checked")
"""the kinds that play a trained policy (``KIND:RUN_DIR...``)"""
DEFAULT_CHECKED_K = 10
"""how many of the policy's most likely actions ``sac-checked`` simulates unless told"""
DEFAULT_K = {"sac-critic": 1, "sac-checked": DEFAULT_CHECKED_K}
"""K when a spec gives none"""
CHECKED_FLAGS = ("expert", "revert", "critic", "policy", "steady", "wary", "swap", "exact")
FLEX_FLAGS = ("swap", "exact")
"""flags of the net's continuous moves, written after ``flex=K``"""


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """What a spec names: ``AgentSpec.parse("sac-checked:runs/a:50:stop=0.95")`` reads one and
    ``str(spec)`` writes it back (``parse(str(spec)) == spec``). Settings a kind does not take stay
    at their defaults, and an option left out stays left out (``k=None``: the kind's default)."""

    kind: str
    """one of :data:`KINDS`"""
    path: str = ""
    """sac, sac-critic, sac-checked: the run directory or checkpoint file of the policy"""
    settings: str = ""
    """greedy: its settings as written after ``greedy:`` (``3000``, ``budget=500,lines=1``); empty: the defaults"""
    k: int | None = None
    """sac-critic, sac-checked: how many of the policy's most likely actions (None: :data:`DEFAULT_K`)"""
    stop: float | None = None
    """sac-checked: simulate one candidate at a time and play the first below this max rho"""
    act: float | None = None
    """sac, sac-critic, sac-checked: act from this max rho (None: the run's ``rho_threshold``)"""
    expert: bool = False
    """sac-checked: the expert's search goes on when no candidate is below ``stop``"""
    expert_budget: int | None = None
    """sac-checked with ``expert``: most candidates that search simulates (None: greedy's default)"""
    revert: bool = False
    """sac-checked: a split substation goes back to the reference topology on calm steps"""
    critic: bool = False
    """sac-checked: candidates in the order the critics value them"""
    policy: bool = False
    """sac-checked: the policy's own choice simulated first, before reconnect-or-nothing"""
    steady: bool = False
    """sac-checked: no change again, while a line stays overloaded, to the substation just changed"""
    wary: bool = False
    """sac-checked with ``stop``: while a line is overloaded, doing nothing is not safe on its forecast alone"""
    flex: int = 0
    """sac-checked with ``expert`` and ``revert``: continuous moves the safety net may try (0: none)"""
    swap: bool = False
    """sac-checked with ``flex``: each move also tried in place of the moves in force"""
    exact: bool = False
    """sac-checked with ``flex``: each redispatch moves the generator's target by the move's MW"""
    release: float | None = None
    """sac-checked with ``flex``: release the moves in force on any step below this max rho"""

    def __post_init__(self) -> None:
        check_spec(self)

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        """The spec ``text`` names, or AgentSpecError saying what is wrong and what is accepted."""
        kind, _, argument = text.partition(":")
        if kind in ("do-nothing", "reconnect") and not argument:
            return cls(kind)
        if kind == "greedy":
            return cls(kind, settings=argument)
        rest, act = split_act(kind, argument) if kind in POLICY_KINDS else ("", None)
        if rest:
            return parse_policy(kind, rest, act)
        raise AgentSpecError(f"unknown agent spec {text!r}; accepted: {', '.join(AGENT_SPECS)}")

    @classmethod
    def with_options(cls, kind: str, path: str | Path, options: str = "") -> AgentSpec:
        """The policy at ``path`` played as ``kind`` with ``options`` written as in a spec
        (``50:stop=0.95:expert`` for sac-checked; empty: none)."""
        return cls.parse(":".join([kind, str(path), *([options] if options else [])]))

    @property
    def top_k(self) -> int:
        """K, or the kind's default when the spec gives none."""
        return self.k if self.k is not None else DEFAULT_K[self.kind]

    def __str__(self) -> str:
        if self.kind == "greedy":
            return f"greedy:{self.settings}" if self.settings else "greedy"
        if self.kind not in POLICY_KINDS:
            return self.kind
        parts = [self.kind, self.path]
        if self.k is not None:
            parts.append(str(self.k))
        if self.stop is not None:
            parts.append(f"stop={self.stop!r}")
        if self.act is not None:
            parts.append(f"act={self.act!r}")
        parts += [
            f"expert={self.expert_budget}" if flag == "expert" and self.expert_budget is not None else flag
            for flag in CHECKED_FLAGS
            if getattr(self, flag) and flag not in FLEX_FLAGS
        ]
        if self.flex:
            parts.append(f"flex={self.flex}")
        if self.release is not None:
            parts.append(f"release={self.release!r}")
        parts += [flag for flag in FLEX_FLAGS if getattr(self, flag)]
        return ":".join(parts)


def check_spec(spec: AgentSpec) -> None:
    """Refuse an AgentSpec whose text would not read back as it: an unknown kind, greedy settings
    the expert does not take, a policy kind without a path, a setting its kind does not take, or a
    value out of range."""
    if spec.kind not in KINDS:
        raise AgentSpecError(f"unknown agent kind {spec.kind!r}; accepted: {', '.join(KINDS)}")
    if spec.kind == "greedy":
        try:
            parse_expert_spec(spec.settings)
        except AgentSpecError as exc:
            raise AgentSpecError(f"{exc} (defaults: {EXPERT_SETTINGS})") from None
    taken = {
        "greedy": {"settings"},
        "sac": {"path", "act"},
        "sac-critic": {"path", "k", "act"},
        "sac-checked": {"path", "k", "stop", "act", "expert_budget", "flex", "release", *CHECKED_FLAGS},
    }.get(spec.kind, set())
    for field in dataclasses.fields(spec):
        if field.name not in taken | {"kind"} and getattr(spec, field.name) != field.default:
            raise AgentSpecError(f"{spec.kind} takes no {field.name} (got {getattr(spec, field.name)!r})")
    if spec.kind in POLICY_KINDS and not spec.path:
        raise AgentSpecError(f"{spec.kind} needs the path of a run directory or checkpoint")
    if spec.k is not None and (isinstance(spec.k, bool) or not isinstance(spec.k, int) or spec.k < 1):
        raise AgentSpecError(f"{spec.kind} K {spec.k!r} must be a positive integer")
    for name in ("stop", "act", "release"):
        value = getattr(spec, name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if value is not None and not (number and 0 < value < math.inf):
            raise AgentSpecError(f"{spec.kind} {name}={value!r} must be a positive max rho")
    if spec.expert and spec.stop is None:
        raise AgentSpecError(
            "sac-checked's expert fallback needs a stop (it searches when no candidate is below it)"
        )
    if spec.wary and spec.stop is None:
        raise AgentSpecError(
            "sac-checked's wary needs a stop (without one every candidate is simulated and the lowest "
            "plays already), e.g. sac-checked:runs/a:10:stop=0.95:expert=10:wary"
        )
    budget = spec.expert_budget
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise AgentSpecError(f"sac-checked expert={budget!r}: the budget must be a positive integer")
    if budget is not None and not spec.expert:
        raise AgentSpecError("sac-checked's expert_budget needs the expert fallback (expert=True)")
    flex = spec.flex
    if isinstance(flex, bool) or not isinstance(flex, int) or flex < 0:
        raise AgentSpecError(
            f"sac-checked flex={flex!r}: the number of moves must be 0 (none) or a positive integer"
        )
    if flex and not (spec.expert and spec.revert):
        raise AgentSpecError(
            "sac-checked's flex needs the expert fallback and revert (the net plays continuous moves, "
            "calm steps release them), e.g. sac-checked:runs/a:50:stop=0.9:expert=50:revert:flex=4"
        )
    for flag in (*FLEX_FLAGS, "release"):
        if getattr(spec, flag) and not flex:
            example = "release=0.85" if flag == "release" else flag
            raise AgentSpecError(
                f"sac-checked's {flag} needs flex (it changes how continuous moves are played), "
                f"e.g. sac-checked:runs/a:50:stop=0.9:expert=50:revert:flex=4:{example}"
            )


def parse_policy(kind: str, argument: str, act: float | None) -> AgentSpec:
    """The spec of ``KIND:ARGUMENT`` for a kind of :data:`POLICY_KINDS` (its act=R split off: ``act``)."""
    if kind == "sac":
        return AgentSpec(kind, argument, act=act)
    if kind == "sac-critic":
        path, k = parse_k(kind, argument)
        return AgentSpec(kind, path, k=k, act=act)
    return parse_checked_spec(argument, act)


def parse_k(kind: str, argument: str) -> tuple[str, int | None]:
    """``(path, K)`` from ``PATH[:K]`` (K None when not given); a K that is not a positive integer is refused."""
    head, _, tail = argument.rpartition(":")
    if not (head and tail.lstrip("-").isdigit()):
        return argument, None
    if int(tail) < 1:
        raise AgentSpecError(f"{kind} K {tail!r} must be a positive integer, e.g. {kind}:runs/a:10")
    return head, int(tail)


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


def parse_checked_spec(argument: str, act: float | None = None) -> AgentSpec:
    """The sac-checked spec of ``RUN_DIR[:K][:stop=R][:expert[=N]][:revert][:critic][:policy][:steady][:wary][:flex=K][:release=R][:swap][:exact]``
    (its act=R already split off: ``act``)."""
    path, stop, flags, budget, flex, release = argument, None, set(), None, 0, None
    head, _, tail = path.rpartition(":")
    while head and (tail in CHECKED_FLAGS or tail.startswith(("expert=", "flex=", "release="))):
        if tail.startswith("expert="):
            budget = _positive_count(tail, "the expert's budget", "expert=200")
        if tail.startswith("flex="):
            flex = _positive_count(tail, "the number of continuous moves", "expert=50:revert:flex=4")
        if tail.startswith("release="):
            release = _max_rho(tail, "50:stop=0.9:expert=30:revert:flex=4:release=0.85")
        path, flags = head, flags | {tail.partition("=")[0]}
        head, _, tail = path.rpartition(":")
    if head and tail.startswith("stop="):
        stop, path = _max_rho(tail, "10:stop=1.0"), head
    if "expert" in flags and stop is None:
        raise AgentSpecError(
            "sac-checked's expert fallback needs a stop (it searches when no candidate is below it), "
            "e.g. sac-checked:runs/a:50:stop=0.95:expert"
        )
    path, k = parse_k("sac-checked", path)
    flags_set = {flag: flag in flags for flag in CHECKED_FLAGS}
    return AgentSpec(
        "sac-checked",
        path,
        k=k,
        stop=stop,
        act=act,
        expert_budget=budget,
        flex=flex,
        release=release,
        **flags_set,
    )


def _max_rho(part: str, example: str) -> float:
    """R of a ``stop=R`` or ``release=R`` part: a positive max rho, or AgentSpecError with an example."""
    name, _, value = part.partition("=")
    try:
        rho = float(value)
    except ValueError:
        rho = math.nan
    if not 0 < rho < math.inf:
        raise AgentSpecError(
            f"sac-checked {name} {part!r} must be a positive max rho, e.g. sac-checked:runs/a:{example}"
        )
    return rho


def _positive_count(part: str, what: str, example: str) -> int:
    """N of an ``expert=N`` or ``flex=N`` part: a positive integer, or AgentSpecError with an example."""
    value = part.partition("=")[2]
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise AgentSpecError(
            f"sac-checked {part!r}: {what} must be a positive integer, e.g. sac-checked:runs/a:50:stop=0.95:{example}"
        )
    return int(value)
