"""Operators' actions with a continuous move (redispatch, curtailment, storage): parsed, described,
refused before simulation with the limit named, and simulated with the move as grid2op plays it."""

from __future__ import annotations

import warnings

import grid2op
import numpy as np
import pytest
from grid2op.Action import PlayableAction, TopologyAndDispatchAction
from lightsim2grid import LightSimBackend

from ace_core.grid.action_space import build_action_space
from ace_core.grid.flex.moves import FlexMove
from ace_core.live import (
    LiveAction,
    LiveActionError,
    card_action,
    describe_action,
    grid_layout,
    parse_action,
    to_grid2op,
    what_if,
)
from ace_core.live.legality import LegalityRules
from ace_core.live.recommendations import live_pipeline

REDISPATCH = {"redispatch": [[0, 5.0]]}


def _make(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # every kind of action, as the live grids play them (the storage grid's own class has no buses)
        env = grid2op.make(name, test=True, backend=LightSimBackend(), action_class=PlayableAction)
    env.set_id(0)
    env.seed(0)
    obs = env.reset()
    return env, build_action_space(env), obs


@pytest.fixture(scope="module")
def sandbox():
    """l2rpn_case14_sandbox: redispatchable and renewable generators, no storage unit."""
    env, space, obs = _make("l2rpn_case14_sandbox")
    yield env, space, obs, LegalityRules(env, space)
    env.close()


@pytest.fixture(scope="module")
def storage():
    """educ_case14_storage: two storage units (5 and 10 MW)."""
    env, space, obs = _make("educ_case14_storage")
    yield env, space, obs, LegalityRules(env, space)
    env.close()


def test_any_action_may_carry_a_continuous_move(sandbox):
    env, space, obs, _ = sandbox
    nothing = parse_action({"kind": "nothing", "move": REDISPATCH}, space)
    assert nothing.kind == "nothing" and nothing.move == FlexMove(redispatch=((0, 5.0),))
    assert nothing.to_dict() == {"kind": "nothing", "move": REDISPATCH}
    assert parse_action(nothing.to_dict(), space) == nothing
    index = space.n_line + 5
    split = parse_action({"kind": "index", "index": index, "move": REDISPATCH}, space)
    assert split.to_dict() == {"kind": "index", "index": index, "move": REDISPATCH}
    # grid2op's action is the topology and the redispatch together
    assert to_grid2op(split, space, env.action_space) == space.to_grid2op(
        index, env.action_space
    ) + env.action_space({"redispatch": [(0, 5.0)]})
    # words: the units by their one names (ace_core.grid.names), as every other element
    assert describe_action(nothing, space) == "redispatch generator 0 +5.0 MW"
    assert describe_action(split, space) == f"{space.describe(index)} and redispatch generator 0 +5.0 MW"
    # without a move, the action is what it always was
    assert parse_action({"kind": "nothing"}, space) == LiveAction("nothing")
    assert parse_action({"kind": "nothing", "move": None}, space) == LiveAction("nothing")


def test_a_cards_move_is_played_when_the_card_is_accepted(sandbox):
    _, space, _, _ = sandbox
    move = FlexMove(redispatch=((0, 3.0), (5, -3.0)))
    alone = card_action(-2001, (), space, move)
    assert alone == LiveAction("nothing", move=move)
    with_topology = card_action(-2002, (space.n_line + 5,), space, move.to_dict())
    assert with_topology.move == move and with_topology.kind == "topology"
    assert parse_action(with_topology.to_dict(), space) == with_topology


@pytest.mark.parametrize(
    ("move", "message"),
    [
        ("up", "move: a continuous move must be a JSON object with any of redispatch, curtail, storage"),
        ({"boost": [[0, 1.0]]}, "move: unknown part(s) boost of a continuous move; accepted:"),
        ({}, "move: a continuous move needs at least one setpoint"),
        ({"redispatch": [[0]]}, "move: redispatch: [0] is not a [unit, MW] pair"),
        ({"redispatch": [[0, "five"]]}, "move: redispatch: 'five' MW must be a finite number"),
        ({"storage": [[0, 1.0], [0, 2.0]]}, "move: storage: unit 0 is set twice"),
    ],
)
def test_a_malformed_move_is_refused_with_what_is_accepted(sandbox, move, message):
    _, space, _, _ = sandbox
    with pytest.raises(LiveActionError) as refused:
        parse_action({"kind": "nothing", "move": move}, space)
    assert str(refused.value).startswith(message)


def test_a_pair_carries_its_move_itself(sandbox):
    _, space, _, _ = sandbox
    part = {"kind": "line", "line": 3, "status": "disconnect", "move": REDISPATCH}
    with pytest.raises(LiveActionError, match="a pair's actions carry no move; put the move on the pair"):
        parse_action({"kind": "pair", "actions": [part, {"kind": "index", "index": 30}]}, space)


def _refusal(grid, move: dict) -> str:
    _, space, obs, rules = grid
    return rules.refusal(obs, parse_action({"kind": "nothing", "move": move}, space))


def test_each_limit_is_refused_in_words_before_simulation(sandbox, storage):
    obs = sandbox[2]
    assert _refusal(sandbox, REDISPATCH) == ""
    assert _refusal(sandbox, {"redispatch": [[0, 8.0]]}) == (
        "redispatching generator 0 by +8.0 MW is past its ramp: it moves by at most +5.0 MW up and "
        "-5.0 MW down per step"
    )
    assert _refusal(sandbox, {"curtail": [[0, 10.0]]}) == (
        "generator 0 (nuclear) is not renewable: curtailment applies to renewables only; here: "
        "generator 2, generator 3, generator 4"
    )
    assert _refusal(sandbox, {"storage": [[0, 1.0]]}) == (
        "this grid has no storage unit: storage setpoints are not available here"
    )
    assert _refusal(storage, {"storage": [[0, 4.0]]}) == ""
    assert _refusal(storage, {"storage": [[0, 20.0]]}) == (
        "a setpoint of +20.0 MW on storage 0 is outside its power: from -5.0 MW (discharging) to "
        "+5.0 MW (charging)"
    )
    assert _refusal(storage, {"storage": [[2, 1.0]]}) == "unknown storage unit 2; this grid has units 0 to 1"
    # a topology action and a refused move: the move's limit is named
    _, space, _, rules = sandbox
    split = parse_action(
        {"kind": "index", "index": space.n_line + 5, "move": {"curtail": [[2, 999.0]]}}, space
    )
    assert rules.refusal(obs, split) == (
        "a curtailment of generator 2 to 999.0 MW is outside its limit: from 0 to its Pmax 70.0 MW"
    )


def test_a_move_this_grids_actions_cannot_play_is_refused(sandbox):
    _, space, obs, _ = sandbox
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # actions with topology and redispatch only (l2rpn_wcci_2020's kind): a curtailment would be dropped
        env = grid2op.make(
            "l2rpn_case14_sandbox",
            test=True,
            backend=LightSimBackend(),
            action_class=TopologyAndDispatchAction,
        )
    try:
        rules = LegalityRules(env, space)
        curtail = parse_action({"kind": "nothing", "move": {"curtail": [[2, 10.0]]}}, space)
        assert (
            rules.refusal(obs, curtail)
            == "this grid's actions cannot play curtail; accepted here: redispatch"
        )
        assert rules.refusal(obs, parse_action({"kind": "nothing", "move": REDISPATCH}, space)) == ""
    finally:
        env.close()


def test_redispatch_past_pmax_is_refused():
    env, space, obs = _make("l2rpn_case14_sandbox")
    rules = LegalityRules(env, space)
    try:
        gen = 1  # 72 MW of 120, 10 MW of ramp: four steps up bring it near its Pmax
        for _ in range(4):
            obs, _, done, _ = env.step(env.action_space({"redispatch": [(gen, 10.0)]}))
            assert not done
        headroom = float(obs.gen_pmax[gen] - obs.gen_p[gen])
        assert 0 < headroom < 10
        why = rules.refusal(
            obs, parse_action({"kind": "nothing", "move": {"redispatch": [[gen, 10.0]]}}, space)
        )
        assert why.startswith("redispatching generator 1 by +10.0 MW is past its Pmax: it produces")
        assert why.endswith(f"so at most {headroom:+.1f} MW up")
    finally:
        env.close()


def test_what_if_with_a_move_matches_grid2op_and_carries_its_cost(sandbox):
    env, space, obs, rules = sandbox
    pipeline = live_pipeline(env, space)
    action = parse_action({"kind": "nothing", "move": {"redispatch": [[0, 5.0], [5, -5.0]]}}, space)
    result = what_if(pipeline, obs, action, rules.refusal(obs, action))
    assert result.legal and result.description == "redispatch generator 0 +5.0 MW, generator 5 -5.0 MW"
    sim_obs, _, done, _ = obs.simulate(to_grid2op(action, space, env.action_space))
    assert not done
    data = result.to_dict()
    assert data["max_rho_after"] == pytest.approx(float(sim_obs.rho.max()), abs=1e-4)
    np.testing.assert_allclose(data["rho_after"], sim_obs.rho, atol=1e-3)
    assert data["action"] == action.to_dict()
    assert data["figures"]["move"] == {"redispatch": [[0, 5.0], [5, -5.0]]}
    assert data["figures"]["cost"] == {
        "mw": 10.0,
        "redispatched_mw": 10.0,
        "curtailed_mw": 0.0,
        "storage_mw": 0.0,
        "euros_per_hour": 400.0,
    }
    # with a topology action: both played, as grid2op plays them together
    index = space.n_line + 5
    both = parse_action({"kind": "index", "index": index, "move": REDISPATCH}, space)
    result = what_if(pipeline, obs, both, rules.refusal(obs, both))
    sim_obs, _, done, _ = obs.simulate(to_grid2op(both, space, env.action_space))
    assert result.legal and not done and result.candidate.parts == (index,)
    assert result.to_dict()["max_rho_after"] == pytest.approx(float(sim_obs.rho.max()), abs=1e-4)
    # a topology action alone carries no move and no cost
    plain = what_if(pipeline, obs, LiveAction("nothing"))
    assert "move" not in plain.figures and "cost" not in plain.figures
    # a refused move is not simulated
    past = parse_action({"kind": "nothing", "move": {"redispatch": [[0, 50.0]]}}, space)
    refused = what_if(pipeline, obs, past, rules.refusal(obs, past))
    assert not refused.legal and "past its ramp" in refused.refusal and refused.candidate is None


def test_the_console_is_offered_the_moves_the_grid_has_units_for(sandbox, storage):
    layout = grid_layout(sandbox[0], sandbox[1])
    assert layout["storages"] == [] and "storage" not in layout["move_kinds"]
    redispatchable = [g["id"] for g in layout["generators"] if g["redispatchable"]]
    renewable = [g["id"] for g in layout["generators"] if g["renewable"]]
    assert redispatchable == [0, 1, 5] and renewable == [2, 3, 4]
    assert layout["generators"][0]["ramp_up"] == 5.0 and layout["generators"][0]["pmax"] == 140.0
    with_storage = grid_layout(storage[0], storage[1])
    assert [(s["raw"], s["max_p_absorb"]) for s in with_storage["storages"]] == [
        ("storage_5_0", 5.0),
        ("storage_7_1", 10.0),
    ]
    assert "storage" in with_storage["move_kinds"]
