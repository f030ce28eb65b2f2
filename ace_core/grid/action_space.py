"""The discrete action space: do-nothing, line reconnections and every unitary set-bus topology.

Indices ``0..N-1`` are laid out as

- ``0``: do nothing;
- ``1..n_line``: reconnect line ``index - 1`` (with the buses it had);
- ``n_line + 1 ..``: grid2op's unitary topology actions
  (``get_all_unitary_topologies_set``: each sets every element of one substation to bus 1 or 2),
  in grid2op's order: 66,810 of them on the 36-substation L2RPN grids, 178 on
  l2rpn_case14_sandbox;
- ``first_move ..``: in a space given continuous moves (:meth:`ActionSpace.with_moves`), a small
  set of discrete redispatch and curtailment moves (:mod:`ace_core.grid.flex.discrete`), each a
  :class:`~ace_core.grid.flex.moves.FlexMove`; none by default.

A topology action is stored compactly as (substation, bus bits): one bit per element of the
substation but the first, which grid2op always keeps on bus 1. Building the set from grid2op takes
8-18 s on the large grids, so it is cached on disk (``$GRIDACE_CACHE_DIR`` or
``~/.cache/gridace``) keyed by env name, grid size and grid2op version.

The *top level* groups actions for the factorised policy: do nothing, one entry per line
reconnection, one entry per substation with topology actions, one entry per continuous move.
Do nothing, reconnections and moves are *leaves*: one action each (``top_action``). ``top_mask(obs)``
is the legality mask at that level and ``action_mask(obs)`` expands it to every index.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import grid2op
import numpy as np

from ace_core.errors import ActionIndexError
from ace_core.grid.flex.moves import FlexMove, refusal
from ace_core.grid.names import ElementNames, element_names

DO_NOTHING = 0
"""the index of doing nothing"""


def cache_dir() -> Path:
    root = os.environ.get("GRIDACE_CACHE_DIR") or Path.home() / ".cache" / "gridace"
    return Path(root)


@dataclass
class ActionSpace:
    env_name: str
    n_line: int
    sub_info: np.ndarray
    """number of elements at each substation"""
    element_labels: list[str]
    """for each topo-vector position, its element's name, e.g. ``line 16-21``"""
    topo_sub: np.ndarray
    """substation of each topology action, int16"""
    topo_bits: np.ndarray
    """bus bits of each topology action (bit j = element j+1 of the substation on bus 2), uint64"""
    line_or_sub: np.ndarray
    line_ex_sub: np.ndarray
    subset: np.ndarray | None = None
    """when restricted: the topology-action positions kept (into the full list)"""
    names: ElementNames | None = field(default=None, repr=False)
    """the grid's element names (:mod:`ace_core.grid.names`); None: by kind and number"""
    moves: tuple[FlexMove, ...] = ()
    """continuous moves the policy may play, after the topology actions (:meth:`with_moves`)"""
    _actions: dict = field(default_factory=dict, repr=False)

    # ----- sizes and layout -----
    @property
    def n_topology(self) -> int:
        return len(self.topo_sub)

    @property
    def n(self) -> int:
        return 1 + self.n_line + self.n_topology + len(self.moves)

    @property
    def n_sub(self) -> int:
        return len(self.sub_info)

    @property
    def first_topology(self) -> int:
        return 1 + self.n_line

    @property
    def first_move(self) -> int:
        return 1 + self.n_line + self.n_topology

    @cached_property
    def sub_start(self) -> np.ndarray:
        """topo-vector position of each substation's first element"""
        return np.concatenate([[0], np.cumsum(self.sub_info)[:-1]]).astype(np.int64)

    @cached_property
    def subs_with_actions(self) -> np.ndarray:
        return np.unique(self.topo_sub).astype(np.int64)

    @cached_property
    def topo_sub_set(self) -> frozenset[int]:
        return frozenset(int(s) for s in self.subs_with_actions)

    @property
    def n_top(self) -> int:
        return 1 + self.n_line + len(self.subs_with_actions) + len(self.moves)

    @cached_property
    def top_of_action(self) -> np.ndarray:
        """top-level category of every action index"""
        n_subs = len(self.subs_with_actions)
        sub_to_top = np.full(self.n_sub, -1, dtype=np.int64)
        sub_to_top[self.subs_with_actions] = 1 + self.n_line + np.arange(n_subs)
        first_move_top = 1 + self.n_line + n_subs
        parts = [
            np.arange(1 + self.n_line),
            sub_to_top[self.topo_sub],
            first_move_top + np.arange(len(self.moves)),
        ]
        return np.concatenate(parts).astype(np.int64)

    @cached_property
    def top_sub(self) -> np.ndarray:
        """substation of each top-level category (-1 for the leaves: do-nothing, reconnections, moves)"""
        leaves = np.full(1 + self.n_line, -1)
        return np.concatenate([leaves, self.subs_with_actions, np.full(len(self.moves), -1)]).astype(np.int64)

    @cached_property
    def top_action(self) -> np.ndarray:
        """the action index of each leaf category (-1 for a substation's)"""
        subs = np.full(len(self.subs_with_actions), -1)
        moves = self.first_move + np.arange(len(self.moves))
        return np.concatenate([np.arange(1 + self.n_line), subs, moves]).astype(np.int64)

    @cached_property
    def free_offset(self) -> np.ndarray:
        """index of each substation's first free element in the free-element list"""
        return np.concatenate([[0], np.cumsum(np.maximum(self.sub_info - 1, 0))[:-1]]).astype(np.int64)

    @property
    def n_free(self) -> int:
        return int(np.maximum(self.sub_info - 1, 0).sum())

    @cached_property
    def _index_of_topology(self) -> dict[tuple[int, int], int]:
        return {(int(s), int(b)): i for i, (s, b) in enumerate(zip(self.topo_sub, self.topo_bits))}

    # ----- conversions -----
    def check_index(self, index: int) -> int:
        if isinstance(index, bool) or not isinstance(index, int | np.integer) or not 0 <= index < self.n:
            raise ActionIndexError(
                f"action index {index!r} is out of range; accepted: integers 0 to {self.n - 1} on {self.env_name}"
            )
        return int(index)

    def bits_of(self, index: int) -> tuple[int, np.ndarray]:
        """(substation, bus of each element as 1/2) of a topology action index."""
        t = self.check_index(index) - self.first_topology
        if t < 0 or t >= self.n_topology:
            raise ActionIndexError(
                f"action {index} is not a topology action (those are {self.first_topology} to "
                f"{self.first_move - 1})"
            )
        sub = int(self.topo_sub[t])
        n = int(self.sub_info[sub])
        bits = (int(self.topo_bits[t]) >> np.arange(n - 1)) & 1
        return sub, np.concatenate([[1], 1 + bits]).astype(np.int64)

    def index_of_topology(self, sub: int, buses) -> int | None:
        """Index of the topology action setting ``sub``'s elements to ``buses`` (None if not in the set)."""
        buses = np.asarray(buses, dtype=np.int64)
        if len(buses) != self.sub_info[sub] or np.any((buses != 1) & (buses != 2)):
            return None
        if buses[0] == 2:  # the same topology with bus names swapped
            buses = 3 - buses
        key = int(((buses[1:] - 1) << np.arange(len(buses) - 1)).sum())
        t = self._index_of_topology.get((int(sub), key))
        return None if t is None else self.first_topology + t

    def is_topology(self, index: int) -> bool:
        """Whether ``index`` is a topology action (not do-nothing, a reconnection or a move)."""
        return self.first_topology <= index < self.first_move

    def move_of(self, index: int) -> FlexMove | None:
        """The continuous move of an action index (None for the others)."""
        j = self.check_index(index) - self.first_move
        return self.moves[j] if j >= 0 else None

    def set_bus_vector(self, index: int) -> np.ndarray:
        sub, buses = self.bits_of(index)
        vec = np.zeros(int(self.sub_info.sum()), dtype=np.int32)
        start = self.sub_start[sub]
        vec[start : start + len(buses)] = buses
        return vec

    def to_grid2op(self, index: int, g2op_space):
        """The grid2op action for ``index`` (memoised: actions are built once per space)."""
        index = self.check_index(index)
        action = self._actions.get(index)
        if action is None:
            if index == 0:
                action = g2op_space({})
            elif index <= self.n_line:
                action = g2op_space({"set_line_status": [(index - 1, 1)]})
            elif index >= self.first_move:
                action = self.moves[index - self.first_move].to_grid2op(g2op_space)
            else:
                action = g2op_space({"set_bus": self.set_bus_vector(index)})
            if len(self._actions) > 20_000:
                self._actions.clear()
            self._actions[index] = action
        return action

    def index_of_grid2op(self, action) -> int | None:
        """Index of a grid2op action in this space, or None when it is not one of ours (a continuous
        move is named by its setpoints, :mod:`ace_core.live.actions`, not by an index)."""
        if action == action.__class__():
            return 0
        status = action.line_set_status
        set_bus = action.set_bus
        if np.count_nonzero(status) == 1 and not np.any(set_bus) and status[np.flatnonzero(status)[0]] == 1:
            return 1 + int(np.flatnonzero(status)[0])
        touched = np.flatnonzero(set_bus)
        if len(touched) == 0:
            return None
        subs = np.unique(np.searchsorted(self.sub_start, touched, side="right") - 1)
        if len(subs) != 1:
            return None
        sub = int(subs[0])
        start = self.sub_start[sub]
        return self.index_of_topology(sub, set_bus[start : start + self.sub_info[sub]])

    # ----- legality -----
    def top_mask(self, obs) -> np.ndarray:
        """Legal top-level categories: cooldowns and maintenance respected.

        A line can be reconnected when it is out and its cooldown (maintenance included) is over.
        A substation can be reconfigured when its cooldown is over and every disconnected line
        ending there could be reconnected (a set-bus action on its end reconnects it).
        """
        line_out = ~obs.line_status
        line_ready = obs.time_before_cooldown_line == 0
        reconnect_ok = line_out & line_ready
        sub_ok = obs.time_before_cooldown_sub == 0
        blocked_lines = line_out & ~line_ready
        if blocked_lines.any():
            sub_ok = sub_ok.copy()
            sub_ok[self.line_or_sub[blocked_lines]] = False
            sub_ok[self.line_ex_sub[blocked_lines]] = False
        moves_ok = np.fromiter((not refusal(obs, move) for move in self.moves), bool, len(self.moves))
        return np.concatenate([[True], reconnect_ok, sub_ok[self.subs_with_actions], moves_ok])

    def action_mask(self, obs) -> np.ndarray:
        return self.top_mask(obs)[self.top_of_action]

    # ----- words -----
    def line_name(self, line: int) -> str:
        """A line's one name (:mod:`ace_core.grid.names`), e.g. ``line 16-21``."""
        return self.names.line(line) if self.names is not None else f"line {line}"

    def substation_name(self, sub: int) -> str:
        return self.names.substation(sub) if self.names is not None else f"substation {sub}"

    def describe(self, index: int) -> str:
        """The action in words, e.g. ``substation 16: line 16-21, generator 4 to bus 2; others on bus 1``
        (a line is named once at the substation, which tells which of its ends moves)."""
        index = self.check_index(index)
        if index == 0:
            return "do nothing"
        if index <= self.n_line:
            return f"reconnect {self.line_name(index - 1)}"
        if index >= self.first_move:
            return self.moves[index - self.first_move].describe(self.names)
        return self.describe_buses(*self.bits_of(index))

    def describe_buses(self, sub: int, buses) -> str:
        """A whole configuration of substation ``sub`` (every element's bus, 1 or 2) in the words
        of :meth:`describe`."""
        start = self.sub_start[sub]
        on_two = [self.element_labels[start + j] for j in np.flatnonzero(np.asarray(buses) == 2)]
        if not on_two:
            return f"{self.substation_name(sub)}: all elements to bus 1"
        return f"{self.substation_name(sub)}: {', '.join(on_two)} to bus 2; others on bus 1"

    # ----- subsets and moves -----
    def with_moves(self, moves) -> ActionSpace:
        """This space with the continuous moves ``moves`` after its topology actions (in place of
        any it had)."""
        return replace(self, moves=tuple(moves), _actions={})

    def restrict(self, topology_indices) -> ActionSpace:
        """A space keeping do-nothing, reconnections, the given topology action indices and the moves."""
        keep = np.unique(np.asarray([self.check_index(int(i)) for i in topology_indices], dtype=np.int64))
        if np.any(keep < self.first_topology) or np.any(keep >= self.first_move):
            raise ActionIndexError("restrict() takes topology action indices only")
        positions = keep - self.first_topology
        base = self.subset if self.subset is not None else np.arange(self.n_topology)
        return ActionSpace(
            env_name=self.env_name,
            n_line=self.n_line,
            sub_info=self.sub_info,
            element_labels=self.element_labels,
            topo_sub=self.topo_sub[positions],
            topo_bits=self.topo_bits[positions],
            line_or_sub=self.line_or_sub,
            line_ex_sub=self.line_ex_sub,
            subset=base[positions],
            names=self.names,
            moves=self.moves,
        )

    def restrict_to_file(self, path) -> ActionSpace:
        """Restrict to the topology action indices listed in a text file (one per line)."""
        text = Path(path).read_text()
        try:
            indices = [int(token) for token in text.split()]
        except ValueError as exc:
            raise ActionIndexError(f"{path} must hold one integer action index per line ({exc})") from exc
        if not indices:
            raise ActionIndexError(f"{path} lists no action index")
        return self.restrict(indices)

    def fingerprint(self) -> str:
        """Identifies the space; checkpoints store it to refuse another env's policy."""
        digest = hashlib.sha256()
        for array in (self.sub_info, self.topo_sub, self.topo_bits, self.line_or_sub, self.line_ex_sub):
            digest.update(np.ascontiguousarray(array).tobytes())
        if self.moves:  # a space without moves keeps the fingerprint it had before moves existed
            digest.update(json.dumps([m.to_dict() for m in self.moves], sort_keys=True).encode())
        return f"{self.env_name}:{self.n}:{digest.hexdigest()[:16]}"


def env_name_of(env) -> str:
    """The name the env was made with (grid2op appends the backend's class name to its own)."""
    return getattr(env, "gridace_name", None) or env.env_name.removesuffix("LightSimBackend")


def build_action_space(env, *, use_cache: bool = True) -> ActionSpace:
    """The full action space of ``env``, from the disk cache when there is one."""
    name = env_name_of(env)
    path = (
        cache_dir() / "action_spaces" / f"{name}-{env.n_sub}-{env.dim_topo}-grid2op{grid2op.__version__}.npz"
    )
    if use_cache and path.exists():
        try:
            with np.load(path) as data:
                topo_sub, topo_bits = data["topo_sub"], data["topo_bits"]
            return _assemble(env, name, topo_sub, topo_bits)
        except (OSError, KeyError, ValueError):
            pass  # a corrupt cache file is rebuilt below
    topo_sub, topo_bits = _enumerate_topologies(env)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        # write then rename: a crash never leaves a truncated cache behind
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as tmp:
            np.savez_compressed(tmp, topo_sub=topo_sub, topo_bits=topo_bits)
        os.replace(tmp.name, path)
    return _assemble(env, name, topo_sub, topo_bits)


def _enumerate_topologies(env) -> tuple[np.ndarray, np.ndarray]:
    space = env.action_space
    sub_start = np.concatenate([[0], np.cumsum(env.sub_info)[:-1]])
    subs, bits = [], []
    for action in space.get_all_unitary_topologies_set(space):
        set_bus = action.set_bus
        touched = np.flatnonzero(set_bus)
        sub = int(np.searchsorted(sub_start, touched[0], side="right") - 1)
        buses = set_bus[sub_start[sub] : sub_start[sub] + env.sub_info[sub]]
        if buses[0] == 2:
            buses = 3 - buses
        subs.append(sub)
        bits.append(int(((buses[1:] - 1).astype(np.int64) << np.arange(len(buses) - 1)).sum()))
    return np.asarray(subs, dtype=np.int16), np.asarray(bits, dtype=np.uint64)


def _assemble(env, name: str, topo_sub: np.ndarray, topo_bits: np.ndarray) -> ActionSpace:
    names = element_names(env, name)
    # columns of grid_objects_types after the substation: load, gen, line or, line ex, storage
    by_kind = (names.loads, names.generators, names.lines, names.lines, names.storages)
    labels = []
    for row in env.action_space.grid_objects_types:
        kind = int(np.flatnonzero(row[1:] >= 0)[0])
        labels.append(by_kind[kind][int(row[1 + kind])])
    return ActionSpace(
        env_name=name,
        n_line=int(env.n_line),
        sub_info=np.asarray(env.sub_info, dtype=np.int64),
        element_labels=labels,
        topo_sub=topo_sub.astype(np.int16),
        topo_bits=topo_bits.astype(np.uint64),
        line_or_sub=np.asarray(env.line_or_to_subid, dtype=np.int64),
        line_ex_sub=np.asarray(env.line_ex_to_subid, dtype=np.int64),
        names=names,
    )
