"""Text renderings for LLM prompts and operators: ``T_s(obs)`` and ``T_a(action)``.

Compact on purpose (a few hundred tokens for a small model's context): the overloaded and most
loaded lines with their rho, disconnected lines and why, cooldowns, split substations. Lines go
by their one name (:mod:`ace_core.grid.names`: ``line 1-4``, the substations they join).
"""

from __future__ import annotations

import numpy as np

from ace_core.grid.action_space import ActionSpace


def state_text(obs, space: ActionSpace, most_loaded: int = 5) -> str:
    """``T_s``: the grid state in words."""
    rho = np.asarray(obs.rho)
    parts = [
        f"Step {int(obs.current_step)} ({int(obs.year):04d}-{int(obs.month):02d}-{int(obs.day):02d} "
        f"{int(obs.hour_of_day):02d}:{int(obs.minute_of_hour):02d}). Max line load {rho.max():.0%} "
        f"on {space.line_name(int(rho.argmax()))}."
    ]
    overloaded = np.flatnonzero(rho >= 1.0)
    if len(overloaded):
        listed = sorted(overloaded, key=lambda i: -rho[i])
        parts.append("Overloaded: " + ", ".join(f"{space.line_name(i)} {rho[i]:.0%}" for i in listed) + ".")
    loaded = [i for i in np.argsort(-rho) if rho[i] < 1.0 and obs.line_status[i]][:most_loaded]
    if loaded:
        parts.append("Most loaded: " + ", ".join(f"{space.line_name(i)} {rho[i]:.0%}" for i in loaded) + ".")
    out = np.flatnonzero(~obs.line_status)
    if len(out):
        described = []
        for i in out:
            why = ""
            if obs.duration_next_maintenance[i] > 0 and obs.time_next_maintenance[i] == 0:
                why = ", maintenance"
            elif obs.time_before_cooldown_line[i] > 0:
                why = f", cooldown {int(obs.time_before_cooldown_line[i])}"
            described.append(f"{space.line_name(i)}{why}")
        parts.append("Disconnected: " + ", ".join(described) + ".")
    cooling = np.flatnonzero(obs.time_before_cooldown_sub > 0)
    if len(cooling):
        parts.append(
            "Substations in cooldown: "
            + ", ".join(f"{s} ({int(obs.time_before_cooldown_sub[s])} steps)" for s in cooling)
            + "."
        )
    split = sorted({int(s) for s in np.flatnonzero(_split_substations(obs, space))})
    if split:
        parts.append("Substations split into two buses: " + ", ".join(map(str, split)) + ".")
    return " ".join(parts)


def action_text(space: ActionSpace, index: int) -> str:
    """``T_a``: an action index in words."""
    return space.describe(index)


def _split_substations(obs, space: ActionSpace) -> np.ndarray:
    on_two = np.asarray(obs.topo_vect) == 2
    counts = np.add.reduceat(on_two.astype(np.int64), space.sub_start)
    return counts > 0
