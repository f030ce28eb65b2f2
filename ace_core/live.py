"""The live grid behind the operator's console: one scenario stepped on demand, with the deployed
policy's recommendations, operators' actions checked and simulated, and export as EpisodeData.

Pure Python (no Django): the web app's feed worker owns one :class:`LiveGrid` per session and
persists what it returns; the web process keeps a mirror of the same grid (same scenario, seed and
applied actions, so the same states) to answer what-if questions without asking the worker.

Operators' actions are plain JSON objects, checked by :func:`parse_action`:

- ``{"kind": "nothing"}``;
- ``{"kind": "index", "index": 57}``: an action of the policy's space (what recommendations carry);
- ``{"kind": "topology", "substation": 4, "set": [[2, 2], [5, 2]]}``: put elements (positions
  inside the substation, 0-based) on bus 1 or 2, the others keep their bus;
- ``{"kind": "line", "line": 7, "status": "connect" | "disconnect"}``.

States are dicts of plain lists (rho rounded to 1e-3), small enough to persist at every step;
:func:`state_delta` keeps only what changed in the slowly varying parts (line status, buses).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ace_core.agents import load_sac, sac_config
from ace_core.checkpoint import save_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import AceError
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario, chronic_lengths, cut_episodes
from ace_core.grid.simulate import simulate_rho
from ace_core.grid.text import state_text
from ace_core.recommend import Recommendation, recommend
from ace_core.rl.sac import SAC

ACTION_KINDS = ("nothing", "index", "topology", "line")
LINE_STATUSES = ("connect", "disconnect")
BUSES = (1, 2)
OVERLOAD = 1.0


class LiveActionError(AceError, ValueError):
    """An operator's action that names nothing real or cannot be played now; the message says why."""


# ----- envs and scenarios ---------------------------------------------------------------------
_pool: dict[str, list[Any]] = {}
_pool_lock = threading.Lock()
_lengths: dict[str, list[tuple[str, int]]] = {}


def acquire_env(name: str):
    """An env of ``name``: a released one when there is one (making one costs 1-3 s; every
    :class:`LiveGrid` resets it to its own scenario and seed before use), else a new one."""
    with _pool_lock:
        free = _pool.get(name)
        if free:
            return free.pop()
    return make_env(name)


def release_env(name: str, env) -> None:
    # an env left after a game over refuses get_obs() (the policy's feature builder calls it)
    env.reset()
    with _pool_lock:
        _pool.setdefault(name, []).append(env)


def live_scenarios(env, episode_length: int = DEFAULT_EPISODE_LENGTH) -> list[Scenario]:
    """Every episode the env's chronics give (all splits), in a fixed order: live sessions name
    their scenario by its position in this list."""
    name = getattr(env, "gridace_name", "")
    lengths = _lengths.get(name) if name else None
    if lengths is None:
        lengths = chronic_lengths(env)  # resets the env once per chronic: computed once per env name
        if name:
            _lengths[name] = lengths
    return cut_episodes(lengths, episode_length)


def shorter(scenario: Scenario, max_steps: int) -> Scenario:
    """``scenario`` cut to ``max_steps`` steps (0: unchanged)."""
    if max_steps and max_steps < scenario.length:
        return replace(scenario, length=max_steps)
    return scenario


# ----- actions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LiveAction:
    kind: str
    index: int = 0
    substation: int = -1
    set: tuple[tuple[int, int], ...] = ()
    """(element position inside the substation, bus)"""
    line: int = -1
    status: str = ""

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "index":
            return {"kind": "index", "index": self.index}
        if self.kind == "topology":
            return {"kind": "topology", "substation": self.substation, "set": [list(p) for p in self.set]}
        if self.kind == "line":
            return {"kind": "line", "line": self.line, "status": self.status}
        return {"kind": "nothing"}


DO_NOTHING = LiveAction("nothing")


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer | str):
        raise LiveActionError(f"{what} must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise LiveActionError(f"{what} must be an integer, got {value!r}") from None


def parse_action(spec: Any, space: ActionSpace) -> LiveAction:
    """Check an action's shape and names against the grid; see the module docstring."""
    if not isinstance(spec, dict):
        raise LiveActionError(f"an action must be a JSON object with a 'kind'; got {type(spec).__name__}")
    kind = spec.get("kind")
    if kind not in ACTION_KINDS:
        raise LiveActionError(f"unknown action kind {kind!r}; accepted: {', '.join(ACTION_KINDS)}")
    if kind == "nothing":
        return DO_NOTHING
    if kind == "index":
        index = _int(spec.get("index"), "index")
        if not 0 <= index < space.n:
            raise LiveActionError(f"action index {index} does not exist; accepted: 0 to {space.n - 1}")
        return LiveAction("index", index=index)
    if kind == "line":
        line = _int(spec.get("line"), "line")
        if not 0 <= line < space.n_line:
            raise LiveActionError(f"unknown line {line}; this grid has lines 0 to {space.n_line - 1}")
        status = spec.get("status")
        if status not in LINE_STATUSES:
            raise LiveActionError(
                f"line status {status!r} is not accepted; accepted: {', '.join(LINE_STATUSES)}"
            )
        return LiveAction("line", line=line, status=status)
    sub = _int(spec.get("substation"), "substation")
    if not 0 <= sub < space.n_sub:
        raise LiveActionError(f"unknown substation {sub}; this grid has substations 0 to {space.n_sub - 1}")
    pairs = spec.get("set")
    if not isinstance(pairs, list) or not pairs:
        raise LiveActionError("a topology action needs 'set': a list of [element, bus] pairs, e.g. [[2, 2]]")
    size = int(space.sub_info[sub])
    chosen: dict[int, int] = {}
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise LiveActionError(f"{pair!r} is not an [element, bus] pair")
        element, bus = _int(pair[0], "element"), _int(pair[1], "bus")
        if not 0 <= element < size:
            raise LiveActionError(
                f"substation {sub} has no element {element}; accepted: 0 to {size - 1} "
                f"({', '.join(space.element_labels[space.sub_start[sub] + j] for j in range(size))})"
            )
        if bus not in BUSES:
            raise LiveActionError(f"bus {bus} is not accepted; accepted: 1 or 2")
        if element in chosen and chosen[element] != bus:
            raise LiveActionError(f"element {element} of substation {sub} is set twice, to different buses")
        chosen[element] = bus
    return LiveAction("topology", substation=sub, set=tuple(sorted(chosen.items())))


def absolute_action(index: int, space: ActionSpace) -> LiveAction:
    """A policy's action index as a space-independent action (the web process's mirror of the grid
    builds the full action space, the policy may use a restricted one)."""
    index = space.check_index(index)
    if index == 0:
        return DO_NOTHING
    if index <= space.n_line:
        return LiveAction("line", line=index - 1, status="connect")
    sub, buses = space.bits_of(index)
    return LiveAction("topology", substation=int(sub), set=tuple((j, int(b)) for j, b in enumerate(buses)))


def describe_action(action: LiveAction, space: ActionSpace) -> str:
    if action.kind == "index":
        return space.describe(action.index)
    if action.kind == "topology":
        start = space.sub_start[action.substation]
        moves = ", ".join(f"{space.element_labels[start + e]} to bus {b}" for e, b in action.set)
        return f"substation {action.substation}: {moves}"
    if action.kind == "line":
        return f"{action.status} line {action.line}"
    return "do nothing"


def to_grid2op(action: LiveAction, space: ActionSpace, g2op_space):
    if action.kind == "index":
        return space.to_grid2op(action.index, g2op_space)
    if action.kind == "topology":
        buses = np.zeros(int(space.sub_info[action.substation]), dtype=np.int32)  # 0: unchanged
        for element, bus in action.set:
            buses[element] = bus
        return g2op_space({"set_bus": {"substations_id": [(action.substation, buses)]}})
    if action.kind == "line":
        return g2op_space({"set_line_status": [(action.line, 1 if action.status == "connect" else -1)]})
    return g2op_space({})


# ----- layout and states ----------------------------------------------------------------------
def grid_layout(env, space: ActionSpace) -> dict[str, Any]:
    """The static drawing of the grid: substations at grid2op's layout coordinates (a circle when
    the env has none), their elements, and the lines between them."""
    names = [str(n) for n in env.name_sub]
    layout = env.grid_layout or {}
    n_sub = len(names)
    subs = []
    for s, name in enumerate(names):
        if name in layout:
            x, y = (float(v) for v in layout[name])
        else:
            x, y = math.cos(2 * math.pi * s / n_sub) * 300, math.sin(2 * math.pi * s / n_sub) * 300
        start = int(space.sub_start[s])
        subs.append(
            {
                "id": s,
                "name": name,
                "x": x,
                "y": y,
                "start": start,
                "elements": [space.element_labels[start + j] for j in range(int(space.sub_info[s]))],
            }
        )
    lines = [
        {
            "id": i,
            "name": str(env.name_line[i]),
            "or": int(space.line_or_sub[i]),
            "ex": int(space.line_ex_sub[i]),
        }
        for i in range(space.n_line)
    ]
    return {"env": space.env_name, "substations": subs, "lines": lines}


def grid_state(obs, step: int) -> dict[str, Any]:
    """What the console draws for one step (JSON-ready)."""
    rho = np.asarray(obs.rho, dtype=np.float64)
    status = np.asarray(obs.line_status, dtype=bool)
    in_maintenance = (np.asarray(obs.time_next_maintenance) == 0) & (
        np.asarray(obs.duration_next_maintenance) > 0
    )
    return {
        "step": step,
        "time": obs.get_time_stamp().isoformat(timespec="minutes"),
        "rho": [round(float(r), 3) for r in rho],
        "line_status": [int(s) for s in status],
        "bus": [int(b) for b in obs.topo_vect],
        "maintenance": [int(i) for i in np.flatnonzero(in_maintenance)],
        "cooldown_line": [int(c) for c in obs.time_before_cooldown_line],
        "cooldown_sub": [int(c) for c in obs.time_before_cooldown_sub],
        "max_rho": round(float(rho.max()), 4) if len(rho) else 0.0,
        "overloads": [int(i) for i in np.flatnonzero(rho >= OVERLOAD)],
    }


DELTA_KEYS = ("line_status", "bus", "cooldown_line", "cooldown_sub")
"""lists that change rarely between steps: sent as [[position, value], ...] changes"""


def state_delta(previous: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """``current`` with the slowly varying lists replaced by their changes since ``previous``
    (``{"delta": True, "changes": {key: [[i, value], ...]}}``); the full state without previous."""
    if previous is None:
        return {**current, "delta": False}
    out = {k: v for k, v in current.items() if k not in DELTA_KEYS}
    out["delta"] = True
    out["changes"] = {
        key: [[i, v] for i, (u, v) in enumerate(zip(previous[key], current[key])) if u != v]
        for key in DELTA_KEYS
    }
    return out


def apply_delta(previous: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`state_delta` (what the page does in JavaScript)."""
    if not delta.get("delta"):
        return {k: v for k, v in delta.items() if k != "delta"}
    state = {k: v for k, v in delta.items() if k not in ("delta", "changes")}
    for key in DELTA_KEYS:
        values = list(previous[key])
        for i, v in delta["changes"][key]:
            values[i] = v
        state[key] = values
    return state


def alarms_between(
    previous: dict[str, Any] | None, current: dict[str, Any], *, done: bool, finished: bool, reason: str = ""
) -> list[dict[str, Any]]:
    """Alarms raised by a step: a line going over its limit, a line tripping (out, not for
    maintenance nor by an operator's action), a line entering maintenance, game over."""
    alarms = []
    if done and not finished:
        why = f": {reason}" if reason else ""
        alarms.append(
            {"kind": "game_over", "line": None, "message": f"game over at step {current['step']}{why}"}
        )
        return alarms
    before_over = set(previous["overloads"]) if previous else set()
    for line in current["overloads"]:
        if line not in before_over:
            alarms.append(
                {
                    "kind": "overload",
                    "line": line,
                    "message": f"line {line} overloaded (rho {current['rho'][line]:.2f})",
                }
            )
    before_maintenance = set(previous["maintenance"]) if previous else set()
    for line in current["maintenance"]:
        if line not in before_maintenance:
            alarms.append({"kind": "maintenance", "line": line, "message": f"line {line} in maintenance"})
    if previous:
        for line, (was, now) in enumerate(zip(previous["line_status"], current["line_status"])):
            if was and not now and line not in current["maintenance"]:
                alarms.append({"kind": "line_tripped", "line": line, "message": f"line {line} tripped"})
    return alarms


# ----- outcomes -------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhatIf:
    """An action simulated one step ahead from the current state."""

    action: dict[str, Any]
    description: str
    legal: bool
    refusal: str
    """why the action cannot be played (empty when legal)"""
    max_rho_before: float
    max_rho_after: float | None
    overloads_after: tuple[int, ...] = ()
    lines_relieved: tuple[int, ...] = ()
    new_overloads: tuple[int, ...] = ()
    rho_after: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "description": self.description,
            "legal": self.legal,
            "refusal": self.refusal,
            "max_rho_before": self.max_rho_before,
            "max_rho_after": self.max_rho_after,
            "overloads_after": list(self.overloads_after),
            "lines_relieved": list(self.lines_relieved),
            "new_overloads": list(self.new_overloads),
            "rho_after": list(self.rho_after),
        }


def card_dict(card: Recommendation) -> dict[str, Any]:
    return {
        "action_index": card.action_index,
        "description": card.description,
        "confidence": round(card.confidence, 4),
        "source": card.source,
        "max_rho_before": round(card.max_rho_before, 4),
        "max_rho_after": None if card.max_rho_after is None else round(card.max_rho_after, 4),
        "lines_relieved": list(card.lines_relieved),
        "new_overloads": list(card.new_overloads),
        "error": card.error,
    }


@dataclass
class StepResult:
    step: int
    state: dict[str, Any]
    reward: float
    done: bool
    finished: bool
    """the scenario reached its last step (done without game over)"""
    reason: str
    """why the grid failed, when done and not finished"""
    text: str
    cards: list[Recommendation] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


class LiveGrid:
    """One live scenario: reset, step with operators' actions, recommend, what-if."""

    def __init__(
        self,
        env_name: str,
        scenario_index: int,
        seed: int,
        policy_path: str | Path | None,
        *,
        k: int = 3,
        max_steps: int = 0,
        episode_length: int = DEFAULT_EPISODE_LENGTH,
        env=None,
        space: ActionSpace | None = None,
    ) -> None:
        self.env_name = env_name
        self._pooled = env is None
        self.env = env if env is not None else acquire_env(env_name)
        self.space = space or build_action_space(self.env)
        all_scenarios = live_scenarios(self.env, episode_length)
        if not 0 <= scenario_index < len(all_scenarios):
            raise LiveActionError(
                f"scenario {scenario_index} does not exist for {env_name}; accepted: 0 to {len(all_scenarios) - 1}"
            )
        self.scenario = shorter(all_scenarios[scenario_index], max_steps)
        self.seed = seed
        self.k = k
        self.sac: SAC | None = None
        self.features: FeatureBuilder | None = None
        if policy_path:
            self.sac, self.space, self.features, _ = load_sac(Path(policy_path), self.env, self.space)
        self.obs = None
        self.step_index = 0
        self.done = False
        self.state: dict[str, Any] | None = None
        self._types = self._element_types()

    def close(self) -> None:
        """Hand the env back to the pool (the grid is unusable afterwards)."""
        if self._pooled and self.env is not None:
            release_env(self.env_name, self.env)
        self.env = None

    # ----- stepping -----
    def reset(self) -> StepResult:
        self.obs = self.env.reset(seed=self.seed, options=self.scenario.reset_options())
        self.step_index = 0
        self.done = False
        self.state = grid_state(self.obs, 0)
        return self._result(reward=0.0, done=False, reason="")

    def replay(self, actions: list[dict[str, Any]]) -> None:
        """Bring a fresh grid to the state after ``actions`` (one JSON action per step played):
        how a restarted worker resumes and how the web process mirrors the worker's grid."""
        self.reset()
        for spec in actions:
            self._advance(parse_action(spec, self.space) if spec else DO_NOTHING)

    def advance(self, action: LiveAction = DO_NOTHING) -> None:
        """Play ``action`` without computing recommendations (replays, mirrors)."""
        self._advance(action)

    def step(self, action: LiveAction = DO_NOTHING, *, with_recommendations: bool = True) -> StepResult:
        """Play ``action`` (or nothing) and return the new state, with recommendations."""
        reward, done, reason = self._advance(action)
        return self._result(
            reward=reward, done=done, reason=reason, with_recommendations=with_recommendations
        )

    def _advance(self, action: LiveAction) -> tuple[float, bool, str]:
        if self.done:
            raise LiveActionError(
                f"the scenario is over (step {self.step_index}); nothing more can be played"
            )
        obs, reward, done, info = self.env.step(to_grid2op(action, self.space, self.env.action_space))
        self.obs = obs
        self.step_index += 1
        self.done = bool(done)
        self.state = grid_state(obs, self.step_index)
        return float(reward), bool(done), _reason(info)

    def _result(
        self, *, reward: float, done: bool, reason: str, with_recommendations: bool = True
    ) -> StepResult:
        finished = done and self.step_index >= self.scenario.length - 1 and not reason
        result = StepResult(
            step=self.step_index,
            state=self.state,
            reward=reward,
            done=done,
            finished=finished,
            reason=reason,
            text="" if done else state_text(self.obs, self.space),
        )
        if with_recommendations and not done and self.sac is not None:
            result.cards, result.timings = recommend(
                self.obs, self.sac, self.space, self.features, self.env.action_space, k=self.k
            )
        return result

    # ----- checking and simulating operators' actions -----
    def _element_types(self) -> list[tuple[str, int]]:
        types: list[tuple[str, int]] = [("", -1)] * int(self.space.sub_info.sum())
        for kind, positions in (
            ("load", self.env.load_pos_topo_vect),
            ("gen", self.env.gen_pos_topo_vect),
            ("line", self.env.line_or_pos_topo_vect),
            ("line", self.env.line_ex_pos_topo_vect),
            ("storage", getattr(self.env, "storage_pos_topo_vect", [])),
        ):
            for i, pos in enumerate(positions):
                types[int(pos)] = (kind, i)
        return types

    def refusal(self, action: LiveAction) -> str:
        """Why ``action`` cannot be played on the current state (empty when it can)."""
        obs = self.obs
        if self.done:
            return "the scenario is over; no action can be played"
        if action.kind == "index" and action.index > 0:
            top = self.space.top_of_action[action.index]
            if not self.space.top_mask(obs)[top]:
                if action.index <= self.space.n_line:
                    return self.refusal(LiveAction("line", line=action.index - 1, status="connect"))
                sub, buses = self.space.bits_of(action.index)
                pairs = tuple((j, int(b)) for j, b in enumerate(buses))
                return self.refusal(LiveAction("topology", substation=int(sub), set=pairs)) or (
                    "the policy's action is not allowed now (cooldown or maintenance)"
                )
            if action.index > self.space.n_line:
                sub, buses = self.space.bits_of(action.index)
                return self._island_refusal(int(sub), {j: int(b) for j, b in enumerate(buses)})
            return ""
        if action.kind == "line":
            line = action.line
            connected = bool(obs.line_status[line])
            if action.status == "connect" and connected:
                return f"line {line} is already connected"
            if action.status == "disconnect" and not connected:
                return f"line {line} is already disconnected"
            if obs.time_next_maintenance[line] == 0 and obs.duration_next_maintenance[line] > 0:
                return f"line {line} is in maintenance for {int(obs.duration_next_maintenance[line])} more step(s)"
            if obs.time_before_cooldown_line[line] > 0:
                return (
                    f"line {line} is in cooldown for {int(obs.time_before_cooldown_line[line])} more step(s)"
                )
            return self._disconnection_refusal(line) if action.status == "disconnect" else ""
        if action.kind == "topology":
            sub = action.substation
            if obs.time_before_cooldown_sub[sub] > 0:
                return f"substation {sub} is in cooldown for {int(obs.time_before_cooldown_sub[sub])} more step(s)"
            start = int(self.space.sub_start[sub])
            for element, _ in action.set:
                kind, line = self._types[start + element]
                if kind == "line" and not obs.line_status[line] and obs.time_before_cooldown_line[line] > 0:
                    return (
                        f"moving {self.space.element_labels[start + element]} would reconnect line {line}, "
                        f"which is in cooldown for {int(obs.time_before_cooldown_line[line])} more step(s)"
                    )
            return self._island_refusal(sub, dict(action.set))
        return ""

    def _island_refusal(self, sub: int, chosen: dict[int, int]) -> str:
        """A bus holding loads, generators or storage but no connected line would be an island."""
        start = int(self.space.sub_start[sub])
        size = int(self.space.sub_info[sub])
        buses: dict[int, list[int]] = {}
        for j in range(size):
            bus = chosen.get(j, int(self.obs.topo_vect[start + j]))
            if bus <= 0:
                continue
            buses.setdefault(bus, []).append(j)
        for bus, members in sorted(buses.items()):
            lines = [j for j in members if self._types[start + j][0] == "line"]
            if not lines:
                names = ", ".join(self.space.element_labels[start + j] for j in members)
                return f"would island {names} on bus {bus} of substation {sub} (no line connects that bus)"
        return ""

    def _disconnection_refusal(self, line: int) -> str:
        """Opening ``line`` must leave a line on each of its end buses that holds loads,
        generators or storage (else they become an island: a load cut off, a generator lost)."""
        for sub, positions in (
            (int(self.space.line_or_sub[line]), self.env.line_or_pos_topo_vect),
            (int(self.space.line_ex_sub[line]), self.env.line_ex_pos_topo_vect),
        ):
            position = int(positions[line])
            bus = int(self.obs.topo_vect[position])
            start = int(self.space.sub_start[sub])
            others = [
                j
                for j in range(int(self.space.sub_info[sub]))
                if start + j != position and int(self.obs.topo_vect[start + j]) == bus
            ]
            if others and not any(self._types[start + j][0] == "line" for j in others):
                names = ", ".join(self.space.element_labels[start + j] for j in others)
                return (
                    f"disconnecting line {line} would island {names} on bus {bus} of substation {sub} "
                    "(no other line connects that bus)"
                )
        return ""

    def what_if(self, action: LiveAction) -> WhatIf:
        """Simulate ``action`` one step ahead; refused (with the reason) when it cannot be played."""
        before = np.asarray(self.obs.rho)
        common = {
            "action": action.to_dict(),
            "description": describe_action(action, self.space),
            "max_rho_before": round(float(before.max()), 4),
        }
        reason = self.refusal(action)
        if reason:
            return WhatIf(legal=False, refusal=reason, max_rho_after=None, **common)
        rho, _, done, info = simulate_rho(self.obs, to_grid2op(action, self.space, self.env.action_space))
        if info.get("is_illegal"):
            return WhatIf(legal=False, refusal="illegal: " + _reason(info), max_rho_after=None, **common)
        if done or info.get("exception"):
            return WhatIf(
                legal=False, refusal="the grid would fail: " + _reason(info), max_rho_after=None, **common
            )
        return WhatIf(
            legal=True,
            refusal="",
            max_rho_after=round(float(rho.max()), 4),
            overloads_after=tuple(int(i) for i in np.flatnonzero(rho >= OVERLOAD)),
            lines_relieved=tuple(int(i) for i in np.flatnonzero((before >= OVERLOAD) & (rho < OVERLOAD))),
            new_overloads=tuple(int(i) for i in np.flatnonzero((before < OVERLOAD) & (rho >= OVERLOAD))),
            rho_after=tuple(round(float(r), 3) for r in rho),
            **common,
        )


def _reason(info: dict) -> str:
    exceptions = info.get("exception") or []
    if not exceptions:
        return ""
    first = exceptions[0] if isinstance(exceptions, list | tuple) else exceptions
    return str(first).splitlines()[0][:300] if str(first) else type(first).__name__


# ----- explanations ---------------------------------------------------------------------------
def explain_messages(*, state_text: str, card: dict[str, Any]) -> list[dict[str, str]]:
    """The chat asking an LLM to explain a recommendation to an operator, in plain words."""
    after = card.get("max_rho_after")
    effect = f"expected max line load after: {after:.0%}" if after is not None else "the simulation failed"
    return [
        {
            "role": "system",
            "content": "You are a power grid operator assistant. Explain recommendations briefly and plainly.",
        },
        {
            "role": "user",
            "content": f"Grid state: {state_text}\nRecommended action: {card['description']} "
            f"(from the {card['source']}, {effect}).\nIn two sentences, why does this action help?",
        },
    ]


# ----- export ---------------------------------------------------------------------------------
class _ReplayAgent:
    """Plays a recorded list of live actions, one per step (then nothing)."""

    def __new__(cls, env, space: ActionSpace, actions: list[dict[str, Any]]):
        from grid2op.Agent import BaseAgent

        class Replay(BaseAgent):
            def __init__(self) -> None:
                super().__init__(env.action_space)
                self.actions = [parse_action(a, space) if a else DO_NOTHING for a in actions]
                self.position = 0

            def reset(self, obs) -> None:
                self.position = 0

            def act(self, observation, reward, done=False):
                action = self.actions[self.position] if self.position < len(self.actions) else DO_NOTHING
                self.position += 1
                return to_grid2op(action, space, self.action_space)

        return Replay()


def export_episode(
    *,
    env_name: str,
    scenario_index: int,
    seed: int,
    actions: list[dict[str, Any]],
    out_dir: Path,
    max_steps: int = 0,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
) -> Path:
    """Write the session as grid2op EpisodeData (what ``EpisodeData.from_disk`` reads) by playing
    its actions again through grid2op's Runner, and return the episode's folder."""
    from grid2op.Runner import Runner

    env = make_env(env_name, cache_chronics=False)  # the Runner resets chronics itself
    space = build_action_space(env)
    scenario = shorter(live_scenarios(env, episode_length)[scenario_index], max_steps)
    # the Runner stops where the session stopped (the scenario's end, a game over or a stop)
    options = {**scenario.reset_options(), "max step": min(scenario.length, max(1, len(actions)))}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runner = Runner(
        **env.get_params_for_runner(), agentClass=None, agentInstance=_ReplayAgent(env, space, actions)
    )
    runner.run(
        nb_episode=1, reset_options=[options], env_seeds=[seed], agent_seeds=[seed], path_save=str(out_dir)
    )
    folders = [p for p in out_dir.iterdir() if p.is_dir()]
    if len(folders) != 1:
        raise AceError(f"the Runner wrote {len(folders)} episode folders in {out_dir}; expected 1")
    return folders[0]


# ----- policies without a training run (benchmarks, tests, first demo) ------------------------
def untrained_policy(env_name: str, path: Path, *, hidden: int = 64, env=None) -> Path:
    """A policy checkpoint with random weights for ``env_name``: the same files and code path as a
    trained run's, for benchmarks and tests that measure speed, not quality."""
    import torch

    env = env if env is not None else make_env(env_name)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    config = TrainConfig(env=env_name, hidden=hidden)
    torch.manual_seed(0)
    sac = SAC(features.size, space, sac_config(config, space))
    return save_checkpoint(
        {
            "config": config.to_dict(),
            "fingerprint": space.fingerprint(),
            "subset": None,
            "sac": sac.state_dict(),
            "features": features.state_dict(),
        },
        Path(path),
    )


def zip_folder(folder: Path, archive_base: Path) -> Path:
    """``folder`` as ``archive_base.zip`` (written through a temporary name)."""
    with tempfile.TemporaryDirectory(dir=archive_base.parent) as tmp:
        made = shutil.make_archive(
            str(Path(tmp) / archive_base.name), "zip", root_dir=folder.parent, base_dir=folder.name
        )
        target = archive_base.with_suffix(".zip")
        Path(made).replace(target)
    return target
