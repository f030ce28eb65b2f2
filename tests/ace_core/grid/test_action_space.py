import numpy as np
import pytest

from ace_core.errors import ActionIndexError
from ace_core.grid.action_space import build_action_space, cache_dir
from ace_core.grid.flex.moves import FlexMove


def test_sandbox_counts(sandbox_space):
    assert sandbox_space.n_topology == 178
    assert sandbox_space.n == 1 + 20 + 178


def test_wcci_2020_has_the_full_66810_topologies(wcci_space):
    assert wcci_space.n_topology == 66_810
    assert wcci_space.n == 1 + 59 + 66_810


def test_every_index_round_trips_through_grid2op(sandbox, sandbox_space):
    space = sandbox_space
    reference = sandbox.action_space.get_all_unitary_topologies_set(sandbox.action_space)
    for position, action in enumerate(reference):
        index = space.first_topology + position
        assert space.to_grid2op(index, sandbox.action_space) == action
        assert space.index_of_grid2op(action) == index
    assert space.index_of_grid2op(sandbox.action_space({})) == 0
    assert space.index_of_grid2op(sandbox.action_space({"set_line_status": [(4, 1)]})) == 5


def test_descriptions_name_substation_elements_and_buses(sandbox_space):
    space = sandbox_space
    assert space.describe(0) == "do nothing"
    assert space.describe(3) == "reconnect line 1-2"  # line 2 joins substations 1 and 2
    last = space.describe(space.n - 1)
    assert last.startswith("substation 13: ") and "to bus 2" in last and "line 12-13" in last


@pytest.mark.parametrize("bad", [-1, 199, 10**9, 1.5, True, "3"])
def test_out_of_range_indices_are_refused(sandbox_space, bad):
    with pytest.raises(ActionIndexError, match="accepted: integers 0 to 198"):
        sandbox_space.describe(bad)


def test_cooldown_masks_the_substation_and_allows_reconnection(sandbox, sandbox_space):
    space = sandbox_space
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    assert space.action_mask(obs)[space.first_topology :].all()
    assert not space.action_mask(obs)[1 : 1 + space.n_line].any()  # nothing to reconnect
    params = sandbox.parameters
    params.NB_TIMESTEP_COOLDOWN_SUB = 3
    params.NB_TIMESTEP_COOLDOWN_LINE = 3
    sandbox.change_parameters(params)
    try:
        obs = sandbox.reset(seed=0, options={"time serie id": 0})
        index = next(  # a configuration of substation 1 the grid survives
            i
            for i in space.first_topology + np.flatnonzero(space.topo_sub == 1)
            if not obs.simulate(space.to_grid2op(int(i), sandbox.action_space))[2]
        )
        obs, _, done, _ = sandbox.step(space.to_grid2op(int(index), sandbox.action_space))
        assert not done
        mask = space.action_mask(obs)
        assert not mask[space.first_topology + np.flatnonzero(space.topo_sub == 1)].any()
        assert mask[space.first_topology + np.flatnonzero(space.topo_sub == 2)].all()
        obs, *_ = sandbox.step(sandbox.action_space({"set_line_status": [(7, -1)]}))
        assert not obs.line_status[7]
        assert not space.action_mask(obs)[1 + 7]  # line cooldown
        for _ in range(3):
            obs, *_ = sandbox.step(sandbox.action_space({}))
        assert space.action_mask(obs)[1 + 7]
    finally:
        params.NB_TIMESTEP_COOLDOWN_SUB = 0
        params.NB_TIMESTEP_COOLDOWN_LINE = 0
        sandbox.change_parameters(params)
        sandbox.reset(seed=0, options={"time serie id": 0})


def test_cache_is_reused_and_a_corrupt_file_is_rebuilt(sandbox, sandbox_space):
    files = list((cache_dir() / "action_spaces").glob("l2rpn_case14_sandbox-*.npz"))
    assert len(files) == 1
    files[0].write_bytes(b"not an npz")
    rebuilt = build_action_space(sandbox)
    assert rebuilt.fingerprint() == sandbox_space.fingerprint()
    assert build_action_space(sandbox).n == sandbox_space.n


def test_restrict_keeps_do_nothing_reconnections_and_chosen_topologies(sandbox_space):
    space = sandbox_space
    chosen = [space.first_topology + 5, space.first_topology + 40]
    small = space.restrict(chosen)
    assert small.n == 1 + space.n_line + 2
    assert small.describe(small.first_topology + 1) == space.describe(chosen[1])
    with pytest.raises(ActionIndexError):
        space.restrict([0])


def test_moves_come_after_the_topology_actions_each_a_leaf_of_its_own(sandbox, sandbox_space):
    space = sandbox_space
    pair = FlexMove(redispatch=((1, 5.0), (5, -5.0)))
    cap = FlexMove(curtail=((2, 10.0),))
    flexible = space.with_moves([pair, cap])
    assert flexible.n == space.n + 2 and flexible.first_move == space.n
    assert flexible.n_top == space.n_top + 2
    first = flexible.first_move
    assert flexible.move_of(first + 1) == cap and flexible.move_of(first - 1) is None
    assert not flexible.is_topology(first) and flexible.is_topology(first - 1)
    tops = flexible.top_of_action[[first, first + 1]]
    assert list(tops) == [space.n_top, space.n_top + 1]
    assert list(flexible.top_action[tops]) == [first, first + 1] and list(flexible.top_sub[tops]) == [-1, -1]
    assert flexible.describe(first) == pair.describe(space.names)
    assert flexible.to_grid2op(first + 1, sandbox.action_space) == cap.to_grid2op(sandbox.action_space)
    with pytest.raises(ActionIndexError, match="not a topology action"):
        flexible.bits_of(first)
    # the topology part is untouched, and a space without moves keeps its fingerprint
    assert flexible.describe(first - 1) == space.describe(first - 1)
    assert flexible.fingerprint() != space.fingerprint()
    assert space.with_moves([]).fingerprint() == space.fingerprint()
    restricted = flexible.restrict([space.first_topology + 3])
    assert restricted.moves == flexible.moves and restricted.move_of(restricted.first_move) == pair
    with pytest.raises(ActionIndexError):
        flexible.restrict([first])


def test_a_move_past_its_limits_is_masked(sandbox, sandbox_space):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    small = FlexMove(redispatch=((1, 2.0), (5, -2.0)))
    past_ramp = FlexMove(redispatch=((0, 50.0), (5, -50.0)))  # generator 0 ramps 5 MW a step
    not_renewable = FlexMove(curtail=((0, 10.0),))
    flexible = sandbox_space.with_moves([small, past_ramp, not_renewable])
    mask = flexible.action_mask(obs)
    assert list(mask[flexible.first_move :]) == [True, False, False]
    assert mask[: flexible.first_move].tolist() == sandbox_space.action_mask(obs).tolist()
