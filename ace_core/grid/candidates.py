"""Candidate actions for a state: the one place that says which actions are worth simulating.

The greedy expert (:mod:`ace_core.agents`), the LLM actor's shortlist (:mod:`ace_core.llm.actor`)
and the miner (:mod:`ace_core.imitation.mining`) all draw from here:

- :func:`legal_reconnections`: lines that are out and whose cooldown is over;
- :func:`loaded_substations`: the substations at both ends of the most loaded lines (most loaded
  line first), those that have topology actions;
- :func:`substation_topologies`: every legal topology of one substation, closest to its current
  configuration first (fewest elements changing bus), so that a budget keeps the small moves;
- :func:`near_loaded_lines`: reconnections, then those topologies round-robin over the loaded
  substations (a short list covers each substation, a longer one goes deeper);
- :func:`reference_topologies`: "all elements back to bus 1" for every split substation;
- :func:`disguised_noops`: topology actions equal to the current topology (for example "all to
  bus 1" on a substation already on one bus): they change nothing, so they must not pass for a
  decision. :func:`real_action` folds such an action into do-nothing.
"""

from __future__ import annotations

import numpy as np

from ace_core.grid.action_space import ActionSpace


def legal_reconnections(obs, space: ActionSpace, mask: np.ndarray | None = None) -> list[int]:
    mask = space.action_mask(obs) if mask is None else mask
    return [i for i in range(1, 1 + space.n_line) if mask[i]]


def loaded_substations(obs, space: ActionSpace, n_lines: int) -> list[int]:
    """Substations at both ends of the ``n_lines`` most loaded lines, most loaded first, deduplicated,
    keeping those that have topology actions."""
    subs: list[int] = []
    for line in np.argsort(-np.asarray(obs.rho), kind="stable")[:n_lines]:
        subs += [int(space.line_or_sub[line]), int(space.line_ex_sub[line])]
    return [s for s in dict.fromkeys(subs) if s in space.topo_sub_set]


def substation_bus_bits(obs, space: ActionSpace) -> tuple[np.ndarray, np.ndarray]:
    """(bus-2 bits, connected bits) of every substation's current configuration, element j of a
    substation at bit j, as uint64; buses are renamed so that the first connected element is on
    bus 1 (a topology and its bus-swapped twin are the same configuration)."""
    topo = np.asarray(obs.topo_vect)
    on_two = np.zeros(space.n_sub, dtype=np.uint64)
    connected = np.zeros(space.n_sub, dtype=np.uint64)
    for sub in range(space.n_sub):
        start, n = int(space.sub_start[sub]), int(space.sub_info[sub])
        buses = topo[start : start + n]
        live = buses > 0
        if not live.any():
            continue
        two = buses == 2
        if buses[np.flatnonzero(live)[0]] == 2:
            two = live & ~two
        weights = np.uint64(1) << np.arange(n, dtype=np.uint64)
        on_two[sub] = np.bitwise_or.reduce(weights[two], initial=np.uint64(0))
        connected[sub] = np.bitwise_or.reduce(weights[live], initial=np.uint64(0))
    return on_two, connected


def disguised_noops(obs, space: ActionSpace) -> np.ndarray:
    """Boolean mask over every action index: True for the topology actions that leave their
    substation exactly as it is. A substation with a disconnected element is never a no-op: the
    action would set that element's bus, which reconnects it."""
    on_two, connected = substation_bus_bits(obs, space)
    full = (np.uint64(1) << space.sub_info.astype(np.uint64)) - np.uint64(1)
    # element 0 of a substation is always on bus 1 in an action: the bits sit one position up
    action_two = space.topo_bits.astype(np.uint64) << np.uint64(1)
    subs = space.topo_sub.astype(np.int64)
    out = np.zeros(space.n, dtype=bool)
    out[space.first_topology : space.first_move] = (connected[subs] == full[subs]) & (
        action_two == on_two[subs]
    )
    return out


def is_disguised_noop(obs, space: ActionSpace, index: int) -> bool:
    """:func:`disguised_noops` for one action index."""
    if not space.is_topology(index):
        return False
    sub, buses = space.bits_of(index)
    start = space.sub_start[sub]
    current = np.asarray(obs.topo_vect[start : start + len(buses)])
    if (current <= 0).any():
        return False
    return bool(np.array_equal(buses, current) or np.array_equal(3 - buses, current))


def real_action(obs, space: ActionSpace, index: int) -> int:
    """``index``, or do-nothing (0) when it is a topology action that changes nothing."""
    return 0 if is_disguised_noop(obs, space, index) else int(index)


def substation_topologies(obs, space: ActionSpace, sub: int, mask: np.ndarray | None = None) -> list[int]:
    """Every legal topology of ``sub`` that changes it, fewest elements changing bus first (ties in
    grid2op's order)."""
    mask = space.action_mask(obs) if mask is None else mask
    positions = np.flatnonzero(space.topo_sub == sub)
    rows = space.first_topology + positions
    keep = mask[rows]
    rows, positions = rows[keep], positions[keep]
    if not len(rows):
        return []
    on_two, connected = substation_bus_bits(obs, space)
    action_two = space.topo_bits[positions].astype(np.uint64) << np.uint64(1)
    live = connected[sub]
    diff = (action_two ^ on_two[sub]) & live
    changes = np.minimum(_popcount(diff), _popcount(live) - _popcount(diff))
    order = np.argsort(changes, kind="stable")
    return [int(rows[i]) for i in order if changes[i] > 0]


def reference_topologies(obs, space: ActionSpace, mask: np.ndarray | None = None) -> list[int]:
    """ "All elements to bus 1" for every split substation whose cooldown allows it."""
    mask = space.action_mask(obs) if mask is None else mask
    on_two, _ = substation_bus_bits(obs, space)
    out = []
    for sub in np.flatnonzero(on_two):
        index = space.index_of_topology(int(sub), np.ones(int(space.sub_info[sub]), dtype=np.int64))
        if index is not None and mask[index]:
            out.append(index)
    return out


def near_loaded_lines(
    obs, space: ActionSpace, n_lines: int = 3, per_substation: int | None = None
) -> list[int]:
    """Legal reconnections, then the legal topologies of the substations at both ends of the
    ``n_lines`` most loaded lines (at most ``per_substation`` each, closest first), round-robin
    over those substations, most loaded line first."""
    mask = space.action_mask(obs)
    out = legal_reconnections(obs, space, mask)
    per_sub = [
        substation_topologies(obs, space, sub, mask)[:per_substation]
        for sub in loaded_substations(obs, space, n_lines)
    ]
    depth = max((len(rows) for rows in per_sub), default=0)
    out += [rows[k] for k in range(depth) for rows in per_sub if k < len(rows)]
    return out


def _popcount(values) -> np.ndarray:
    return np.bitwise_count(np.asarray(values, dtype=np.uint64)).astype(np.int64)


def reconnect_or_nothing(obs) -> int:
    """The default action: reconnect the first disconnected line whose cooldown is over, otherwise
    do nothing (index 0)."""
    ready = np.flatnonzero(~obs.line_status & (obs.time_before_cooldown_line == 0))
    return 1 + int(ready[0]) if len(ready) else 0


def greedy_candidates(obs, space: ActionSpace, budget: int) -> list[int]:
    """Legal reconnections, then topologies at both ends of the 3 most loaded lines (closest to the
    current configuration first, round-robin over the substations), no-ops excluded, at most
    ``budget`` in all."""
    noop = disguised_noops(obs, space)
    return [i for i in near_loaded_lines(obs, space, 3) if not noop[i]][:budget]
