"""Candidate generation: no-ops in disguise, closest topologies first, the loaded substations."""

import numpy as np

from ace_core.grid.candidates import (
    disguised_noops,
    is_disguised_noop,
    loaded_substations,
    near_loaded_lines,
    real_action,
    reference_topologies,
    substation_topologies,
)


def all_on_bus_one(space, sub):
    return space.index_of_topology(sub, np.ones(int(space.sub_info[sub]), dtype=np.int64))


def test_all_to_bus_one_on_an_unsplit_substation_is_a_noop_in_disguise(sandbox_space, fresh_obs):
    noop = disguised_noops(fresh_obs, sandbox_space)
    assert not noop[: sandbox_space.first_topology].any()
    for sub in sandbox_space.subs_with_actions:
        index = all_on_bus_one(sandbox_space, int(sub))
        if index is not None:
            assert noop[index] and real_action(fresh_obs, sandbox_space, index) == 0
    # the vector and the one-action check agree on every action
    assert [is_disguised_noop(fresh_obs, sandbox_space, i) for i in range(sandbox_space.n)] == noop.tolist()
    split = int(np.flatnonzero(~noop[sandbox_space.first_topology :])[0]) + sandbox_space.first_topology
    assert real_action(fresh_obs, sandbox_space, split) == split


def test_after_a_split_the_split_is_the_noop_and_going_back_is_not(sandbox, sandbox_space):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    legal = sandbox_space.action_mask(obs) & ~disguised_noops(obs, sandbox_space)
    for split in np.flatnonzero(legal[sandbox_space.first_topology :]) + sandbox_space.first_topology:
        after, _, done, info = sandbox.step(sandbox_space.to_grid2op(int(split), sandbox.action_space))
        if not done and not info["is_illegal"] and not info["exception"]:
            break
        obs = sandbox.reset(seed=0, options={"time serie id": 0})
    sub, _ = sandbox_space.bits_of(int(split))
    noop = disguised_noops(after, sandbox_space)
    assert noop[split] and not noop[all_on_bus_one(sandbox_space, sub)]
    assert int(noop.sum()) == sum(
        1 for i in range(sandbox_space.n) if is_disguised_noop(after, sandbox_space, i)
    )
    assert sub in [
        sandbox_space.bits_of(i)[0]
        for i in reference_topologies(after, sandbox_space, np.ones(sandbox_space.n, bool))
    ]


def test_substation_topologies_are_legal_real_and_closest_first(sandbox_space, fresh_obs):
    mask = sandbox_space.action_mask(fresh_obs)
    noop = disguised_noops(fresh_obs, sandbox_space)
    for sub in sandbox_space.subs_with_actions:
        rows = substation_topologies(fresh_obs, sandbox_space, int(sub))
        every = set(sandbox_space.first_topology + np.flatnonzero(sandbox_space.topo_sub == sub))
        assert set(rows) == {i for i in every if mask[i] and not noop[i]}
        moved = [int((sandbox_space.bits_of(i)[1] == 2).sum()) for i in rows]
        # from all-on-bus-1, the elements changing bus are those sent to bus 2 (or their complement)
        n = int(sandbox_space.sub_info[sub])
        changes = [min(m, n - m) for m in moved]
        assert changes == sorted(changes)


def test_near_loaded_lines_starts_at_the_most_loaded_line(sandbox_space, fresh_obs):
    subs = loaded_substations(fresh_obs, sandbox_space, 1)
    line = int(np.argmax(fresh_obs.rho))
    assert set(subs) <= {int(sandbox_space.line_or_sub[line]), int(sandbox_space.line_ex_sub[line])}
    shortlist = near_loaded_lines(fresh_obs, sandbox_space, 3)
    assert len(shortlist) == len(set(shortlist))
    first_sub = sandbox_space.bits_of(shortlist[0])[0]
    assert first_sub == subs[0]
