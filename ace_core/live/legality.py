"""Whether an operator's action can be played on the current state, and if not, why in words.

grid2op refuses illegal actions itself, but only once played, with a terse reason; the console
asks before (to grey a button out, to refuse a what-if with a reason an operator can act on):
cooldowns, maintenance, lines already in the asked status, reconnections hidden in a topology, and
buses left as islands (loads, generators or storage with no connected line); and for a continuous
move, its limits (:func:`ace_core.grid.flex.moves.refusal`: ramps, Pmin/Pmax, renewables only,
storage power and energy, a grid without such units).
"""

from __future__ import annotations

import numpy as np

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.flex.moves import FlexMove, supported_kinds
from ace_core.grid.flex.moves import refusal as move_refusal
from ace_core.live.actions import LiveAction


class LegalityRules:
    """The rules of one grid; :meth:`refusal` applies them to an observation."""

    def __init__(self, env, space: ActionSpace) -> None:
        self.space = space
        self.line_or_pos = np.asarray(env.line_or_pos_topo_vect)
        self.line_ex_pos = np.asarray(env.line_ex_pos_topo_vect)
        self.types = _element_types(env, space)
        """(kind, id) of each topo-vector position: load, gen, line or storage"""
        params = env.parameters
        self.max_subs = int(params.MAX_SUB_CHANGED)
        self.max_lines = int(params.MAX_LINE_STATUS_CHANGED)
        """how many substations and line statuses one step may change (grid2op's rules)"""
        self.move_kinds = supported_kinds(env.action_space)
        """the continuous moves this grid's actions can play"""

    def refusal(self, obs, action: LiveAction) -> str:
        """Why ``action`` cannot be played on ``obs`` (empty when it can)."""
        return self._topology_part_refusal(obs, action) or (
            self._move_refusal(obs, action.move) if action.move else ""
        )

    def _move_refusal(self, obs, move: FlexMove) -> str:
        """The move's limits, then whether this grid's actions can play it at all (grid2op would
        drop the part they do not support and play the rest)."""
        why = move_refusal(obs, move, self.space.names)
        if why:
            return why
        for kind in ("redispatch", "curtail", "storage"):
            if getattr(move, kind) and kind not in self.move_kinds:
                return f"this grid's actions cannot play {kind}; accepted here: " + (
                    ", ".join(self.move_kinds) or "no continuous move"
                )
        return ""

    def _topology_part_refusal(self, obs, action: LiveAction) -> str:
        if action.kind == "pair":
            return self._pair_refusal(obs, action)
        if action.kind == "index" and action.index > 0:
            return self._index_refusal(obs, action.index)
        if action.kind == "line":
            return self._line_refusal(obs, action)
        if action.kind == "topology":
            return self._topology_refusal(obs, action)
        return ""

    def _pair_refusal(self, obs, action: LiveAction) -> str:
        """A pair changes at most the substations and lines one step may, never one substation
        twice, and each of its actions must be playable on its own."""
        subs = [s for s in (self._substation_of(part) for part in action.parts) if s is not None]
        lines = sum(self._switches_line(part) for part in action.parts)
        if len(subs) != len(set(subs)):
            return f"a pair changes {self.space.substation_name(subs[0])} twice; combine them into one action"
        if len(subs) > self.max_subs:
            return (
                f"this grid allows {self.max_subs} substation change(s) per step and the pair makes "
                f"{len(subs)}; a pair here is a line switch with one substation's topology"
            )
        if lines > self.max_lines:
            return f"this grid allows {self.max_lines} line switch(es) per step and the pair makes {lines}"
        for part in action.parts:
            why = self.refusal(obs, part)
            if why:
                return why
        return ""

    def _substation_of(self, action: LiveAction) -> int | None:
        if action.kind == "topology":
            return action.substation
        if action.kind == "index" and self.space.is_topology(action.index):
            return int(self.space.bits_of(action.index)[0])
        return None

    def _switches_line(self, action: LiveAction) -> bool:
        return action.kind == "line" or (action.kind == "index" and 0 < action.index <= self.space.n_line)

    def _index_refusal(self, obs, index: int) -> str:
        space = self.space
        if index >= space.first_move:
            return self._move_refusal(obs, space.move_of(index))
        if not space.top_mask(obs)[space.top_of_action[index]]:
            if index <= space.n_line:
                return self.refusal(obs, LiveAction("line", line=index - 1, status="connect"))
            sub, buses = space.bits_of(index)
            pairs = tuple((j, int(b)) for j, b in enumerate(buses))
            return self.refusal(obs, LiveAction("topology", substation=int(sub), set=pairs)) or (
                "the policy's action is not allowed now (cooldown or maintenance)"
            )
        if index > space.n_line:
            sub, buses = space.bits_of(index)
            return self._island_refusal(obs, int(sub), {j: int(b) for j, b in enumerate(buses)})
        return ""

    def _line_refusal(self, obs, action: LiveAction) -> str:
        line = action.line
        connected = bool(obs.line_status[line])
        if action.status == "connect" and connected:
            return f"{self.space.line_name(line)} is already connected"
        if action.status == "disconnect" and not connected:
            return f"{self.space.line_name(line)} is already disconnected"
        if obs.time_next_maintenance[line] == 0 and obs.duration_next_maintenance[line] > 0:
            return f"{self.space.line_name(line)} is in maintenance for {int(obs.duration_next_maintenance[line])} more step(s)"
        if obs.time_before_cooldown_line[line] > 0:
            return f"{self.space.line_name(line)} is in cooldown for {int(obs.time_before_cooldown_line[line])} more step(s)"
        return self._disconnection_refusal(obs, line) if action.status == "disconnect" else ""

    def _topology_refusal(self, obs, action: LiveAction) -> str:
        sub = action.substation
        if obs.time_before_cooldown_sub[sub] > 0:
            return f"{self.space.substation_name(sub)} is in cooldown for {int(obs.time_before_cooldown_sub[sub])} more step(s)"
        start = int(self.space.sub_start[sub])
        for element, _ in action.set:
            kind, line = self.types[start + element]
            if kind == "line" and not obs.line_status[line] and obs.time_before_cooldown_line[line] > 0:
                return (
                    f"moving {self.space.element_labels[start + element]} would reconnect it, "
                    f"which is in cooldown for {int(obs.time_before_cooldown_line[line])} more step(s)"
                )
        return self._island_refusal(obs, sub, dict(action.set))

    def _island_refusal(self, obs, sub: int, chosen: dict[int, int]) -> str:
        """A bus holding loads, generators or storage but no connected line would be an island."""
        start = int(self.space.sub_start[sub])
        size = int(self.space.sub_info[sub])
        buses: dict[int, list[int]] = {}
        for j in range(size):
            bus = chosen.get(j, int(obs.topo_vect[start + j]))
            if bus <= 0:
                continue
            buses.setdefault(bus, []).append(j)
        for bus, members in sorted(buses.items()):
            lines = [j for j in members if self.types[start + j][0] == "line"]
            if not lines:
                names = ", ".join(self.space.element_labels[start + j] for j in members)
                return (
                    f"would island {names} on bus {bus} of {self.space.substation_name(sub)} "
                    "(no line connects that bus)"
                )
        return ""

    def _disconnection_refusal(self, obs, line: int) -> str:
        """Opening ``line`` must leave a line on each of its end buses that holds loads,
        generators or storage (else they become an island: a load cut off, a generator lost)."""
        for sub, positions in (
            (int(self.space.line_or_sub[line]), self.line_or_pos),
            (int(self.space.line_ex_sub[line]), self.line_ex_pos),
        ):
            position = int(positions[line])
            bus = int(obs.topo_vect[position])
            start = int(self.space.sub_start[sub])
            others = [
                j
                for j in range(int(self.space.sub_info[sub]))
                if start + j != position and int(obs.topo_vect[start + j]) == bus
            ]
            if others and not any(self.types[start + j][0] == "line" for j in others):
                names = ", ".join(self.space.element_labels[start + j] for j in others)
                return (
                    f"disconnecting {self.space.line_name(line)} would island {names} on bus {bus} of "
                    f"{self.space.substation_name(sub)} "
                    "(no other line connects that bus)"
                )
        return ""


def _element_types(env, space: ActionSpace) -> list[tuple[str, int]]:
    types: list[tuple[str, int]] = [("", -1)] * int(space.sub_info.sum())
    for kind, positions in (
        ("load", env.load_pos_topo_vect),
        ("gen", env.gen_pos_topo_vect),
        ("line", env.line_or_pos_topo_vect),
        ("line", env.line_ex_pos_topo_vect),
        ("storage", getattr(env, "storage_pos_topo_vect", [])),
    ):
        for i, pos in enumerate(positions):
            types[int(pos)] = (kind, i)
    return types
