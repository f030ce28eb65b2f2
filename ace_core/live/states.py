"""What the console draws: the grid's static layout and its state at each step, as plain lists.

States are dicts of plain lists, each figure rounded to the precision the console shows (rho to
1e-3, i.e. 0.1 %; power to 0.1 MW), small enough to persist at every step. :func:`state_delta`
keeps only the figures that changed at that precision: the values that moved beyond what the
console displays.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ace_core.grid.flex.moves import supported_kinds
from ace_core.grid.names import element_names

if TYPE_CHECKING:
    from ace_core.grid.action_space import ActionSpace

OVERLOAD = 1.0


def grid_layout(env, space: ActionSpace) -> dict[str, Any]:
    """The static drawing of the grid: substations at grid2op's layout coordinates (a circle when
    the env has none), their elements, the lines between them (with their thermal limit, A), the
    generators (whether they can be redispatched or curtailed, with their Pmax and ramps, MW),
    loads and storage units (with their power, MW) at each substation. Each element has its one
    ``name`` (:mod:`ace_core.grid.names`) and grid2op's as ``raw``."""
    raw = [str(n) for n in env.name_sub]
    layout = env.grid_layout or {}
    n_sub = len(raw)
    names = space.names or element_names(env)
    subs = []
    for s, name in enumerate(raw):
        if name in layout:
            x, y = (float(v) for v in layout[name])
        else:
            x, y = math.cos(2 * math.pi * s / n_sub) * 300, math.sin(2 * math.pi * s / n_sub) * 300
        start = int(space.sub_start[s])
        subs.append(
            {
                "id": s,
                "name": names.substation(s),
                "raw": name,
                "x": x,
                "y": y,
                "start": start,
                "elements": [space.element_labels[start + j] for j in range(int(space.sub_info[s]))],
            }
        )
    limits = np.asarray(env.get_thermal_limit(), dtype=float)
    lines = [
        {
            "id": i,
            "name": names.line(i),
            "raw": str(env.name_line[i]),
            "or": int(space.line_or_sub[i]),
            "ex": int(space.line_ex_sub[i]),
            "thermal_limit": round(float(limits[i]), 1),
        }
        for i in range(space.n_line)
    ]
    generators = [
        {
            "id": g,
            "name": names.generators[g],
            "raw": str(name),
            "sub": int(sub),
            # what the console's continuous moves may ask of it
            "redispatchable": bool(env.gen_redispatchable[g]),
            "renewable": bool(env.gen_renewable[g]),
            "pmax": round(float(env.gen_pmax[g]), 1),
            "ramp_up": round(float(env.gen_max_ramp_up[g]), 1),
            "ramp_down": round(float(env.gen_max_ramp_down[g]), 1),
        }
        for g, (name, sub) in enumerate(zip(env.name_gen, env.gen_to_subid))
    ]
    storages = [
        {
            "id": s,
            "name": names.storages[s] if s < len(names.storages) else f"storage {s}",
            "raw": str(name),
            "sub": int(sub),
            "max_p_absorb": round(float(env.storage_max_p_absorb[s]), 1),
            "max_p_prod": round(float(env.storage_max_p_prod[s]), 1),
        }
        for s, (name, sub) in enumerate(zip(env.name_storage, env.storage_to_subid))
    ]
    loads = [
        {"id": c, "name": names.loads[c], "raw": str(name), "sub": int(sub)}
        for c, (name, sub) in enumerate(zip(env.name_load, env.load_to_subid))
    ]
    return {
        "env": space.env_name,
        "substations": subs,
        "lines": lines,
        "generators": generators,
        "loads": loads,
        "storages": storages,
        # the continuous moves this grid's actions can play (the console offers only those)
        "move_kinds": list(supported_kinds(env.action_space)),
    }


def grid_state(obs, step: int, attacked=None) -> dict[str, Any]:
    """What the console draws for one step (JSON-ready). ``attacked``: the lines an opponent
    attacks at this step (grid2op's ``info["opponent_attack_line"]``), when the env has one."""
    rho = np.asarray(obs.rho, dtype=np.float64)
    status = np.asarray(obs.line_status, dtype=bool)
    in_maintenance = (np.asarray(obs.time_next_maintenance) == 0) & (
        np.asarray(obs.duration_next_maintenance) > 0
    )
    return {
        "step": step,
        "time": obs.get_time_stamp().isoformat(timespec="minutes"),
        "rho": [round(float(r), 3) for r in rho],
        # MW, for the diagram's hover and its generators and loads
        "p_or": [round(float(p), 1) for p in obs.p_or],
        "gen_p": [round(float(p), 1) for p in obs.gen_p],
        "load_p": [round(float(p), 1) for p in obs.load_p],
        "line_status": [int(s) for s in status],
        "bus": [int(b) for b in obs.topo_vect],
        "maintenance": [int(i) for i in np.flatnonzero(in_maintenance)],
        "attacked": [] if attacked is None else [int(i) for i in np.flatnonzero(attacked)],
        "cooldown_line": [int(c) for c in obs.time_before_cooldown_line],
        "cooldown_sub": [int(c) for c in obs.time_before_cooldown_sub],
        "max_rho": round(float(rho.max()), 4) if len(rho) else 0.0,
        "overloads": [int(i) for i in np.flatnonzero(rho >= OVERLOAD)],
    }


DELTA_KEYS = ("rho", "p_or", "gen_p", "load_p", "line_status", "bus", "cooldown_line", "cooldown_sub")
"""the fixed-length lists (one value per line, generator, load, element or substation): sent as
[[position, value], ...] changes while fewer than half of their values moved"""


def state_delta(previous: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """What changed from ``previous`` to ``current``: ``{"delta": True, ...}`` with the values that
    changed (a fixed-length list whole when at least half of it moved), and ``"changes": {key:
    [[i, value], ...]}`` for the lists of which fewer than half moved; an unchanged value is left
    out. Without ``previous``, the full state (``"delta": False``)."""
    if previous is None:
        return {**current, "delta": False}
    out: dict[str, Any] = {"delta": True}
    changes = {}
    for key, value in current.items():
        before = previous.get(key)
        if value == before:
            continue
        if key in DELTA_KEYS and before is not None and len(before) == len(value):
            moved = [[i, v] for i, (u, v) in enumerate(zip(before, value)) if u != v]
            if 2 * len(moved) < len(value):
                changes[key] = moved
                continue
        out[key] = value
    out["changes"] = changes
    return out


def apply_delta(previous: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`state_delta` (what the page does in JavaScript)."""
    if not delta.get("delta"):
        return {k: v for k, v in delta.items() if k != "delta"}
    state = {**previous, **{k: v for k, v in delta.items() if k not in ("delta", "changes")}}
    for key, moved in delta["changes"].items():
        values = list(previous[key])
        for i, v in moved:
            values[i] = v
        state[key] = values
    return state
