"""A run whose policy also plays continuous moves (``pretrain_moves``): cloned from the mine of an
expert with ``flex`` as ``pretrain --moves`` clones it, trained by RL over the larger space (the
anchor term cloning the mine's moves too) with the moves in force released on calm steps as the
agent releases them, resumed, and refused before it
writes anything when its expert or its mine plays no move."""

import numpy as np
import pytest
import torch

from ace_core.agents.loading import load_agent
from ace_core.checkpoint import load_checkpoint
from ace_core.cli import main
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import MemorySink
from ace_core.grid.envs import make_env
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.imitation.mining import MineSpec, mine
from ace_core.training import run
from ace_core.training.trainer import Trainer
from ace_core.workers import Workers
from tests.sandbox_settings import sandbox_settings

ENV = "l2rpn_case14_sandbox"
FLEX = "greedy:threshold=0.8,flex=4"
# three 16-step train days x1.2, on which the flex expert redispatches (5 of its 24 decisions)
SCALE, LENGTH = 1.2, 16
SETTINGS = sandbox_settings(
    demand_scale=SCALE, episode_length=LENGTH, steps=120, pretrain_moves=3, pretrain_epochs=20, anchor=1.0
)


@pytest.fixture(scope="module")
def flex_mine(tmp_path_factory):
    out = tmp_path_factory.mktemp("flex") / "mine"
    spec = MineSpec(env=ENV, expert=FLEX, episodes=3, episode_length=LENGTH, demand_scale=SCALE)
    mine(spec, out, workers=Workers(1), log=lambda text: None)
    return out


@pytest.fixture(scope="module")
def moves_run(flex_mine, tmp_path_factory):
    out = tmp_path_factory.mktemp("moves-run") / "run"
    config = TrainConfig(**SETTINGS, pretrain_mine=str(flex_mine))
    return config, out, run(config, out, MemorySink())


def test_the_run_is_cloned_as_pretrain_clones_and_trained_over_the_moves(flex_mine, moves_run, tmp_path):
    config, out, result = moves_run
    cloned = load_checkpoint(out / "pretrain" / "checkpoint.pt")
    assert 1 <= len(cloned["moves"]) <= 3
    # the command line's clone of the same mine, seed, width and epochs, weight for weight
    cli = tmp_path / "cli"
    args = ["pretrain", "--env", ENV, "--dataset", str(flex_mine), "--out", str(cli), "--moves", "3"]
    assert main([*args, "--epochs", "20", "--hidden", "64", "--seed", str(config.seed)]) == 0
    by_cli = load_checkpoint(cli)
    assert by_cli["moves"] == cloned["moves"] and by_cli["fingerprint"] == cloned["fingerprint"]
    for name, tensor in by_cli["sac"]["actor"].items():
        assert torch.equal(cloned["sac"]["actor"][name], tensor), name
    # RL went on over the clone's space, and its policy plays the moves
    trained = load_checkpoint(out / "checkpoint.pt")
    assert trained["fingerprint"] == cloned["fingerprint"] and trained["moves"] == cloned["moves"]
    assert result.steps == 120 and result.updates > 0
    agent = load_agent(f"sac:{out}", make_env(ENV))
    assert [move.to_dict() for move in agent.space.moves] == cloned["moves"]


def test_a_resumed_moves_run_is_the_run_played_straight_through(flex_mine, moves_run, tmp_path):
    config, out, _ = moves_run
    longer = TrainConfig.from_dict({**config.to_dict(), "steps": 140})
    resumed = run(longer, out, MemorySink(), resume=True)
    straight = run(longer, tmp_path / "straight", MemorySink())
    assert resumed.steps == straight.steps == 140 and resumed.updates == straight.updates
    # a run rebuilt after its clone and a run resumed from its checkpoint are the same run
    ours, theirs = load_checkpoint(out / "checkpoint.pt"), load_checkpoint(tmp_path / "straight")
    assert ours["moves"] == theirs["moves"] == load_checkpoint(out / "pretrain")["moves"]
    for name, tensor in theirs["sac"]["actor"].items():
        assert torch.equal(ours["sac"]["actor"][name], tensor), name


def test_calm_steps_release_the_moves_in_force_when_the_policy_plays_moves(moves_run):
    config, out, _ = moves_run
    calm = TrainConfig.from_dict({**config.to_dict(), "rho_threshold": 0.99, "demand_scale": 1.0})
    trainer = Trainer(calm, out)  # built as a run restarted after its clone: the moves' space
    assert trainer.space.moves
    # the anchor term clones the mine's moves as the clone learned them
    assert int((trainer.anchor.actions >= trainer.space.first_move).sum()) > 0
    env = trainer.env
    obs = reset_to(env, scenarios(env, "train", LENGTH)[0], 0)
    gen = int(np.flatnonzero(obs.gen_redispatchable)[0])
    other = int(np.flatnonzero(obs.gen_redispatchable)[1])
    obs, *_ = env.step(FlexMove(redispatch=((gen, 2.0), (other, -2.0))).to_grid2op(env.action_space))
    assert abs(obs.target_dispatch[gen]) > 0 and obs.rho.max() < 0.85
    played = trainer.grid_action(obs, 0)
    released = played.redispatch
    assert released[gen] < 0 and released[other] > 0
    # a topology policy's calm step is reconnect or nothing, whatever is in force
    trainer.space = trainer.space.with_moves(())
    assert not np.any(trainer.grid_action(obs, 0).redispatch)


def test_a_moves_run_without_moves_to_learn_is_refused_before_writing(mined, tmp_path, capsys):
    spec, topology_mine, _ = mined
    cases = [
        (dict(env=ENV, pretrain_moves=3), "set pretrain_mine"),
        (
            dict(env=ENV, pretrain_mine="auto", pretrain_expert="greedy:threshold=0.8", pretrain_moves=3),
            "plays none; give it flex",
        ),
        (dict(env=ENV, pretrain_mine="auto", pretrain_expert=FLEX, pretrain_moves=300), "pretrain_moves=300"),
        (
            dict(
                env=ENV,
                pretrain_mine="auto",
                pretrain_expert=FLEX,
                pretrain_moves=3,
                pretrain_move_labels="x",
            ),
            "choose one of: all, alone",
        ),
    ]
    for settings, message in cases:
        with pytest.raises(ConfigError, match=message):
            TrainConfig(**settings).validate()
    out = tmp_path / "run"
    args = ["train", "--env", spec.env, "--pretrain-mine", str(topology_mine), "--pretrain-moves", "3"]
    assert main([*args, "--steps", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds no continuous move" in err and len(err.splitlines()) == 1
    assert not out.exists()
