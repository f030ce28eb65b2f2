"""Operators' actions as plain JSON objects: the accepted shapes, checked by :func:`parse_action`.

- ``{"kind": "nothing"}``;
- ``{"kind": "index", "index": 57}``: an action of the policy's space (what recommendations carry);
- ``{"kind": "topology", "substation": 4, "set": [[2, 2], [5, 2]]}``: put elements (positions
  inside the substation, 0-based) on bus 1 or 2, the others keep their bus;
- ``{"kind": "line", "line": 7, "status": "connect" | "disconnect"}``;
- ``{"kind": "pair", "actions": [A, B]}``: two of the above (not nothing, not a pair) played
  together in one step, as the pipeline's combined cards propose
  (:mod:`ace_core.recommend.pairs`); the grid's rules say how many substations and lines one step
  may change (:mod:`ace_core.live.legality`).

Any of them may carry a continuous move played in the same step, ``"move": {"redispatch": [[gen,
MW], ...], "curtail": [[gen, MW cap], ...], "storage": [[unit, MW], ...]}`` (any of the three,
:class:`~ace_core.grid.flex.moves.FlexMove`), e.g. ``{"kind": "nothing", "move": {"redispatch":
[[0, 5.0]]}}``; a pair carries it on the pair, not on its actions. The move's limits (ramps,
Pmin/Pmax, renewables only, storage power and energy) are the legality rules'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ace_core.errors import AceError
from ace_core.grid.flex.moves import FlexMove, FlexMoveError

if TYPE_CHECKING:
    from ace_core.grid.action_space import ActionSpace

ACTION_KINDS = ("nothing", "index", "topology", "line", "pair")
LINE_STATUSES = ("connect", "disconnect")
BUSES = (1, 2)


class LiveActionError(AceError, ValueError):
    """An operator's action that names nothing real or cannot be played now; the message says why."""


@dataclass(frozen=True)
class LiveAction:
    kind: str
    index: int = 0
    substation: int = -1
    set: tuple[tuple[int, int], ...] = ()
    """(element position inside the substation, bus)"""
    line: int = -1
    status: str = ""
    parts: tuple[LiveAction, ...] = ()
    """a pair's two actions"""
    move: FlexMove | None = None
    """the continuous move played with it, if any"""

    def to_dict(self) -> dict[str, Any]:
        base = self._base_dict()
        return {**base, "move": self.move.to_dict()} if self.move else base

    def _base_dict(self) -> dict[str, Any]:
        if self.kind == "pair":
            return {"kind": "pair", "actions": [part.to_dict() for part in self.parts]}
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
    action = _parse_base(spec, space)
    if spec.get("move") is None:
        return action
    try:
        move = FlexMove.from_dict(spec["move"])
    except FlexMoveError as error:
        raise LiveActionError(f"move: {error}") from None
    return replace(action, move=move)


def _parse_base(spec: dict[str, Any], space: ActionSpace) -> LiveAction:
    kind = spec.get("kind")
    if kind not in ACTION_KINDS:
        raise LiveActionError(f"unknown action kind {kind!r}; accepted: {', '.join(ACTION_KINDS)}")
    if kind == "nothing":
        return DO_NOTHING
    if kind == "pair":
        return _parse_pair(spec, space)
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


def _parse_pair(spec: dict[str, Any], space: ActionSpace) -> LiveAction:
    actions = spec.get("actions")
    if not isinstance(actions, list) or len(actions) != 2:
        raise LiveActionError("a pair needs 'actions': a list of two actions, e.g. [{...}, {...}]")
    parts = []
    for part in actions:
        if isinstance(part, dict) and part.get("kind") in ("pair", "nothing"):
            raise LiveActionError(
                f"a pair's actions are not {part['kind']!r}; accepted: index, topology, line"
            )
        if isinstance(part, dict) and part.get("move") is not None:
            raise LiveActionError(
                "a pair's actions carry no move; put the move on the pair: "
                '{"kind": "pair", "actions": [...], "move": {...}}'
            )
        parts.append(parse_action(part, space))
    return LiveAction("pair", parts=tuple(parts))


def absolute_action(index: int, space: ActionSpace) -> LiveAction:
    """A policy's action index as a space-independent action (the web process's mirror of the grid
    builds the full action space, the policy may use a restricted one)."""
    index = space.check_index(index)
    if index == 0:
        return DO_NOTHING
    if index <= space.n_line:
        return LiveAction("line", line=index - 1, status="connect")
    if index >= space.first_move:
        return replace(DO_NOTHING, move=space.move_of(index))
    sub, buses = space.bits_of(index)
    return LiveAction("topology", substation=int(sub), set=tuple((j, int(b)) for j, b in enumerate(buses)))


def card_action(index: int, parts, space: ActionSpace, move: FlexMove | dict | None = None) -> LiveAction:
    """A card's action, space-independent: for a card with a continuous move (``move``, or its
    JSON), its topology action (the one index of ``parts``, else nothing) with the move; else the
    pair of its ``parts`` (two action indices) for a combined card, else its action index's."""
    if move:
        move = move if isinstance(move, FlexMove) else FlexMove.from_dict(move)
        base = absolute_action(int(parts[0]), space) if parts else DO_NOTHING
        return replace(base, move=move)
    if parts:
        return LiveAction("pair", parts=tuple(absolute_action(int(i), space) for i in parts))
    return absolute_action(index, space)


def describe_action(action: LiveAction, space: ActionSpace) -> str:
    """The action in words, every element by its one name (the space's, :mod:`ace_core.grid.names`)."""
    words = _base_words(action, space)
    if not action.move:
        return words
    move = action.move.describe(space.names)
    return move if action.kind == "nothing" else f"{words} and {move}"


def _base_words(action: LiveAction, space: ActionSpace) -> str:
    if action.kind == "pair":
        return " and ".join(_base_words(part, space) for part in action.parts)
    if action.kind == "index":
        return space.describe(action.index)
    if action.kind == "topology":
        start = space.sub_start[action.substation]
        size = int(space.sub_info[action.substation])
        chosen = dict(action.set)
        if sorted(chosen) == list(range(size)) and set(chosen.values()) <= {1, 2}:
            # a whole configuration (a card's): in the card's own words
            return space.describe_buses(action.substation, [chosen[e] for e in range(size)])
        moves = ", ".join(f"{space.element_labels[start + e]} to bus {b}" for e, b in action.set)
        return f"{space.substation_name(action.substation)}: {moves}"
    if action.kind == "line":
        verb = "reconnect" if action.status == "connect" else action.status  # as a card says it
        return f"{verb} {space.line_name(action.line)}"
    return "do nothing"


def to_grid2op(action: LiveAction, space: ActionSpace, g2op_space):
    """grid2op's action, the continuous move included."""
    base = _base_grid2op(action, space, g2op_space)
    return base + action.move.to_grid2op(g2op_space) if action.move else base


def lines_switched_off(action: LiveAction, space: ActionSpace, g2op_space) -> frozenset[int]:
    """The lines ``action`` itself takes out of service, or may (a line switched off, one of its
    ends set to no bus, a status changed): the operator's doing, which no alarm calls a trip."""
    act = _base_grid2op(action, space, g2op_space)
    off = (
        (act.line_set_status == -1)
        | act.line_change_status
        | (act.line_or_set_bus == -1)
        | (act.line_ex_set_bus == -1)
    )
    return frozenset(int(line) for line in np.flatnonzero(off))


def _base_grid2op(action: LiveAction, space: ActionSpace, g2op_space):
    if action.kind == "pair":
        first, second = (_base_grid2op(part, space, g2op_space) for part in action.parts)
        return first + second
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
