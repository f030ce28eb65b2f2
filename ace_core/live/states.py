"""What the console draws: the grid's static layout and its state at each step, as plain lists.

States are dicts of plain lists (rho rounded to 1e-3), small enough to persist at every step;
:func:`state_delta` keeps only what changed in the slowly varying parts (line status, buses).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ace_core.grid.action_space import ActionSpace

OVERLOAD = 1.0


def grid_layout(env, space: ActionSpace) -> dict[str, Any]:
    """The static drawing of the grid: substations at grid2op's layout coordinates (a circle when
    the env has none), their elements, the lines between them (with their thermal limit, A), and
    the generators and loads at each substation."""
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
    limits = np.asarray(env.get_thermal_limit(), dtype=float)
    lines = [
        {
            "id": i,
            "name": str(env.name_line[i]),
            "or": int(space.line_or_sub[i]),
            "ex": int(space.line_ex_sub[i]),
            "thermal_limit": round(float(limits[i]), 1),
        }
        for i in range(space.n_line)
    ]
    generators = [
        {"id": g, "name": str(name), "sub": int(sub)}
        for g, (name, sub) in enumerate(zip(env.name_gen, env.gen_to_subid))
    ]
    loads = [
        {"id": c, "name": str(name), "sub": int(sub)}
        for c, (name, sub) in enumerate(zip(env.name_load, env.load_to_subid))
    ]
    return {
        "env": space.env_name,
        "substations": subs,
        "lines": lines,
        "generators": generators,
        "loads": loads,
    }


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
        # MW, for the diagram's hover and its generators and loads
        "p_or": [round(float(p), 1) for p in obs.p_or],
        "gen_p": [round(float(p), 1) for p in obs.gen_p],
        "load_p": [round(float(p), 1) for p in obs.load_p],
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
