"""A policy that also plays continuous moves: the flex expert's mine plays and records its moves,
the clone learns their discrete forms, the agent plays them and releases them when calm."""

import numpy as np
import pytest

from ace_core.agents.expert import Expert
from ace_core.agents.loading import load_agent
from ace_core.cli import main
from ace_core.config.expert import parse_expert_spec
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.flex.discrete import mined_moves, moves_from_json
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.scenarios import Scenario, reset_to
from ace_core.imitation.data import join_episodes, load_dataset, play_episode, save_npz_atomic

ENV = "l2rpn_case14_sandbox"
# sandbox days x1.1 where the flex expert (acting from max rho 0.8) redispatches within 16 steps
DAYS = (Scenario(1, "0001", 0, 16), Scenario(0, "0000", 0, 16))


@pytest.fixture(scope="module")
def flex_mine(tmp_path_factory):
    """(env, space, the two episode records, a mine directory holding their dataset)."""
    env = make_env(ENV, demand_scale=1.1)
    space = build_action_space(env)
    expert = Expert.from_config(space, env.action_space, parse_expert_spec("threshold=0.8,flex=4"))
    features = FeatureBuilder(env)
    records = [play_episode(env, space, expert, features, day, seed=0) for day in DAYS]
    out = tmp_path_factory.mktemp("flex-mine")
    save_npz_atomic(out / "dataset.npz", **join_episodes(records))
    return env, space, features, records, out


def test_the_mine_plays_the_experts_moves_and_records_them(flex_mine):
    env, space, features, records, _ = flex_mine
    record = records[0]
    played = [(row, move) for row, move in enumerate(moves_from_json(record["move"])) if move]
    assert played, "the expert redispatches on this day"
    # replaying the topology alone reaches other states after the first move: the moves were played
    first = int(record["step"][played[0][0]])
    obs = reset_to(env, DAYS[0], 0)
    replayed = {}
    for step, action in enumerate(record["played"]):
        replayed[step] = features(obs)
        obs, *_ = env.step(space.to_grid2op(int(action), env.action_space))
    rows_after = [row for row, step in enumerate(record["step"]) if step > first]
    assert rows_after
    assert any(
        not np.allclose(record["features"][row], replayed[int(record["step"][row])]) for row in rows_after
    )
    rows_before = [row for row, step in enumerate(record["step"]) if step <= first]
    for row in rows_before:
        np.testing.assert_allclose(record["features"][row], replayed[int(record["step"][row])], atol=1e-6)


@pytest.fixture(scope="module")
def moves_clone(flex_mine, tmp_path_factory):
    """A policy cloned from the flex mine with its 3 most frequent discrete moves."""
    *_, mine = flex_mine
    run = tmp_path_factory.mktemp("moves-clone") / "bc"
    args = ["pretrain", "--env", ENV, "--dataset", str(mine), "--out", str(run), "--moves", "3"]
    assert main([*args, "--epochs", "100", "--action-weight", "20"]) == 0
    return run


def test_a_clone_with_moves_learns_them_and_the_agent_plays_and_releases_them(flex_mine, moves_clone):
    env, space, _, _, mine = flex_mine
    dataset = load_dataset(mine, space)
    expected = mined_moves(dataset.played_moves(space), env.gen_pmax, 3)
    agent = load_agent(f"sac:{moves_clone}", make_env(ENV))
    assert agent.space.moves == tuple(expected) and agent.space.n == space.n + len(expected)
    labelled = dataset.with_moves(agent.space, env.gen_pmax)
    rows = np.flatnonzero(labelled.actions >= agent.space.first_move)
    assert len(rows) > 0
    # the clone plays a move where the expert did, on the states it learned from
    masks = np.ones(agent.space.n_top, dtype=bool)
    chosen = {int(agent.sac.act(labelled.features[row], masks, None)) for row in rows}
    assert chosen & {int(labelled.actions[row]) for row in rows}

    # a calm state with a redispatch in force: the agent releases it
    calm_env = make_env(ENV)
    calm_env.reset(seed=0, options={"time serie id": 0})
    obs, *_ = calm_env.step(FlexMove(redispatch=((1, 4.0), (5, -4.0))).to_grid2op(calm_env.action_space))
    assert obs.rho.max() < 0.85 and obs.target_dispatch[1] > 0
    plain = load_agent(f"sac:{moves_clone}", calm_env)
    action = plain.act(obs, 0.0)
    assert action.redispatch[1] < 0 and action.redispatch[5] > 0


def test_a_policy_with_moves_neither_plays_a_mine_nor_exports(moves_clone, tmp_path, capsys):
    mine = [
        "mine",
        "--env",
        ENV,
        "--player",
        str(moves_clone),
        "--episodes",
        "1",
        "--out",
        str(tmp_path / "m"),
    ]
    export = ["export", "--run", str(moves_clone), "--out", str(tmp_path / "sub")]
    for args, message in ((mine, "also plays continuous moves"), (export, "also plays continuous moves")):
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m").exists() and not (tmp_path / "sub").exists()


def test_bad_moves_requests_exit_2_and_write_nothing(flex_mine, mined, tmp_path, capsys):
    _, _, _, _, flex = flex_mine
    spec, topology_only, _ = mined
    cases = [
        (ENV, flex, "-1", "--moves=-1 is out of range; accepted: 1 to 200"),
        (
            ENV,
            flex,
            "3 --move-labels some",
            "--move-labels='some' is not accepted; choose one of: all, alone",
        ),
        (spec.env, topology_only, "4", "holds no continuous move; mine with an expert that plays them"),
    ]
    for env_name, dataset, moves, message in cases:
        run = tmp_path / "run"
        args = [
            "pretrain",
            "--env",
            env_name,
            "--dataset",
            str(dataset),
            "--out",
            str(run),
            "--moves",
            *moves.split(),
        ]
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
        assert not run.exists()


def test_moves_learned_alone_leave_the_topology_label_where_the_expert_played_both(flex_mine):
    env, space, _, _, mine = flex_mine
    dataset = load_dataset(mine, space)
    every, alone = dataset.decision_moves(space, "all"), dataset.decision_moves(space, "alone")
    both = [m is not None and space.is_topology(int(a)) for m, a in zip(every, dataset.actions)]
    assert any(both), "the expert played a move with a topology action on these days"
    for move_all, move_alone, action in zip(every, alone, dataset.actions):
        assert move_alone == (move_all if not space.is_topology(int(action)) else None)
    moves = mined_moves(dataset.played_moves(space), env.gen_pmax, 5)
    flexible = space.with_moves(moves)
    labelled = dataset.with_moves(flexible, env.gen_pmax, "alone")
    for row, action in enumerate(dataset.actions):
        if space.is_topology(int(action)):
            assert labelled.actions[row] == action
