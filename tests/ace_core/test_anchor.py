"""The expert anchor: behaviour cloning kept on during RL (``anchor``, ``anchor_mine``)."""

import numpy as np
import pytest
import torch

from ace_core.checkpoint import load_checkpoint
from ace_core.config import MAX_STEPS, TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import MemorySink, MetricsEvent
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.imitation.anchor import ExpertAnchor
from ace_core.imitation.data import DatasetError, save_npz_atomic
from ace_core.training import run
from ace_core.training.trainer import Trainer
from tests.ace_core.conftest import MINE_ENV

# every step a decision, so that ~90 SAC updates move the cloned actor
RL = dict(
    env=MINE_ENV, steps=120, hidden=64, learning_starts=32, batch_size=32, log_every=40, rho_threshold=0.0
)


@pytest.fixture(scope="module")
def clone(mined, tmp_path_factory):
    _, mine_dir, _ = mined
    out = tmp_path_factory.mktemp("anchor") / "clone"
    run(TrainConfig(**{**RL, "steps": 1}, pretrain_mine=str(mine_dir), pretrain_epochs=20), out, MemorySink())
    return mine_dir, out / "pretrain"


def _expert_log_likelihood(run_dir, mine_dir) -> float:
    """Mean log pi(a_expert | s) of a run's last actor over the mine's decisions."""
    env = make_env(MINE_ENV)
    space = build_action_space(env)
    state = load_checkpoint(run_dir / "checkpoint.pt")
    anchor = ExpertAnchor.load([mine_dir], space, state["features"])
    from ace_core.agents.sac import sac_from_state

    sac = sac_from_state(state, env, space)[0]
    with torch.no_grad():
        return float(sac.actor(anchor.features, anchor.masks).log_prob(anchor.actions).mean())


def test_the_anchor_keeps_the_cloned_policy_nearer_the_expert_than_plain_sac(clone, tmp_path):
    mine_dir, start = clone
    likelihood = {}
    for weight in (0.0, 5.0):
        sink = MemorySink()
        out = tmp_path / f"anchor-{weight}"
        config = TrainConfig(
            **RL, init_from=str(start), anchor_mine=str(mine_dir), policy_lr=1e-3, anchor=weight
        )
        assert run(config, out, sink).updates > 50
        likelihood[weight] = _expert_log_likelihood(out, mine_dir)
        anchor_losses = [
            m.values["losses/anchor"] for m in sink.of_type(MetricsEvent) if "losses/anchor" in m.values
        ]
        assert (max(anchor_losses) > 0) == (weight > 0)
    assert likelihood[5.0] > likelihood[0.0]


def test_anchor_settings_are_checked(mined, clone, tmp_path):
    mine_dir, start = clone
    with pytest.raises(ConfigError, match="give anchor_mine"):
        TrainConfig(**RL, anchor=1.0).validate()
    with pytest.raises(ConfigError, match="is not a finished mine"):
        TrainConfig(**RL, anchor=1.0, anchor_mine=str(tmp_path)).validate()
    # the pretrain mine is the default anchor
    assert TrainConfig(**RL, anchor=1.0, pretrain_mine=str(mine_dir)).anchor_mines() == [str(mine_dir)]
    # a mine whose features are not the policy's inputs is refused when the trainer is built
    scaled = tmp_path / "scaled"
    scaled.mkdir()
    (scaled / "summary.json").write_text((mine_dir / "summary.json").read_text())
    with np.load(mine_dir / "dataset.npz") as data:
        arrays = {k: data[k] for k in data.files}
    save_npz_atomic(scaled / "dataset.npz", **{**arrays, "load_scale": arrays["load_scale"] * 2})
    config = TrainConfig(**RL, init_from=str(start), anchor=1.0, anchor_mine=str(scaled))
    with pytest.raises(DatasetError, match="another feature scale"):
        Trainer(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


# the deployed check as the teacher: the policy's top 4 simulated with reconnect-or-nothing
CHECK_TEACHER = dict(teacher_prob=1.0, teacher_steps=MAX_STEPS, teacher_top_k=4, teacher_budget=0)


def _log_likelihood(state: dict, features, masks, actions) -> float:
    from ace_core.agents.sac import sac_from_state

    env = make_env(MINE_ENV)
    sac = sac_from_state(state, env, build_action_space(env))[0]
    with torch.no_grad():
        return float(sac.actor(features, masks).log_prob(actions).mean())


def test_the_teacher_anchor_clones_what_the_check_chose_on_the_runs_states(clone, tmp_path):
    mine_dir, start = clone
    states = {}
    for taught in (False, True):
        config = TrainConfig(
            **RL,
            **CHECK_TEACHER,
            init_from=str(start),
            anchor_mine=str(mine_dir),
            policy_lr=1e-3,
            anchor=5.0,
            teacher_anchor=taught,
        )
        trainer = Trainer(config, tmp_path / f"taught-{taught}")
        trainer.run()
        assert (trainer.extension("teacher").taught is not None) == taught
        states[taught] = load_checkpoint(tmp_path / f"taught-{taught}" / "checkpoint.pt")
    log = states[True]["teacher"]["taught"]
    # every decision of the run was the teacher's, and each one was kept with its inputs
    assert len(log["actions"]) == states[True]["teacher"]["decisions"] == states[True]["loop"]["decisions"]
    assert "taught" not in states[False]["teacher"]
    assert (log["actions"] >= build_action_space(make_env(MINE_ENV)).first_topology).any()
    taught = [torch.from_numpy(log[key]) for key in ("features", "masks", "actions")]
    # the run that cloned them plays the check's choices more likely than the run that did not
    assert _log_likelihood(states[True], *taught) > _log_likelihood(states[False], *taught)


def test_a_resumed_run_keeps_cloning_the_teachers_earlier_decisions(clone, tmp_path):
    mine_dir, start = clone
    settings = dict(
        **RL,
        **CHECK_TEACHER,
        init_from=str(start),
        anchor_mine=str(mine_dir),
        anchor=1.0,
        teacher_anchor=True,
    )
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run(TrainConfig(**settings), straight, MemorySink())
    run(TrainConfig(**{**settings, "steps": 60}), resumed, MemorySink())
    run(TrainConfig(**settings), resumed, MemorySink(), resume=True)
    a, b = load_checkpoint(straight / "checkpoint.pt"), load_checkpoint(resumed / "checkpoint.pt")
    for key in ("features", "masks", "actions"):
        assert np.array_equal(a["teacher"]["taught"][key], b["teacher"]["taught"][key])
    assert all(torch.equal(a["sac"]["actor"][k], b["sac"]["actor"][k]) for k in a["sac"]["actor"])


def test_the_teacher_anchor_needs_a_teacher_and_an_anchor(mined):
    _, mine_dir, _ = mined
    with pytest.raises(ConfigError, match="set teacher_prob > 0 and anchor > 0"):
        TrainConfig(**RL, anchor=1.0, anchor_mine=str(mine_dir), teacher_anchor=True).validate()
    with pytest.raises(ConfigError, match="set teacher_prob > 0 and anchor > 0"):
        TrainConfig(**RL, **CHECK_TEACHER, teacher_anchor=True).validate()


def test_a_checkpoint_written_before_the_teacher_anchor_resumes_with_it_keeping_only_new_decisions(
    clone, tmp_path
):
    mine_dir, start = clone
    settings = dict(**RL, **CHECK_TEACHER, init_from=str(start), anchor_mine=str(mine_dir), anchor=1.0)
    run(TrainConfig(**{**settings, "steps": 60}), tmp_path, MemorySink())
    path = tmp_path / "checkpoint.pt"
    state = load_checkpoint(path)
    del state["config"]["teacher"]["anchor"]  # as written before the setting existed
    torch.save(state, path)
    run(TrainConfig(**settings, teacher_anchor=True), tmp_path, MemorySink(), resume=True)
    resumed = load_checkpoint(path)
    assert resumed["loop"]["step"] == 120
    kept = len(resumed["teacher"]["taught"]["actions"])
    assert kept == resumed["teacher"]["decisions"] - state["teacher"]["decisions"] > 0
