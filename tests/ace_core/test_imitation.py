"""Behaviour cloning on a mined dataset: agreement with the expert on held-out days, checkpoints, bad datasets."""

import json

import numpy as np
import torch

from ace_core.agents.loading import load_agent
from ace_core.checkpoint import days_learned
from ace_core.cli import main
from ace_core.config import TrainConfig
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.imitation.cloning import CloneConfig, agreement, behaviour_clone, split_by_day
from ace_core.imitation.data import load_dataset
from ace_core.imitation.mine_files import mine_days
from ace_core.kernels import CLONE_THREADS
from ace_core.rl.sac import SAC


def test_behaviour_cloning_raises_agreement_with_the_expert_on_held_out_states(mined):
    spec, out, _ = mined
    env = make_env(spec.env)
    space = build_action_space(env)
    dataset = load_dataset(out, space)
    train_rows, held_rows = split_by_day(dataset)
    assert len(held_rows) and not set(dataset.arrays["day"][held_rows]) & set(
        dataset.arrays["day"][train_rows]
    )
    torch.manual_seed(0)
    sac = SAC(dataset.features.shape[1], space, TrainConfig(env=spec.env).sac)
    before = agreement(sac, dataset, held_rows)
    losses = behaviour_clone(sac, dataset, train_rows, CloneConfig(epochs=30))
    after = agreement(sac, dataset, held_rows)
    assert losses[-1] < losses[0]
    assert after > before + 0.2, (before, after)


def test_pretrain_writes_a_policy_the_agents_load(mined, tmp_path, capsys):
    spec, out, summary = mined
    run = tmp_path / "bc"
    assert (
        main(["pretrain", "--env", spec.env, "--dataset", str(out), "--out", str(run), "--epochs", "5"]) == 0
    )
    report = json.loads((run / "pretrain.json").read_text())
    assert report["held_out_decisions"] > 0 and report["agreement_after"] >= 0
    assert 0 < report["held_out_real_actions"] < report["held_out_decisions"]
    assert 0 <= report["real_action_agreement_after"] <= 1
    assert report["decisions_digest"] == summary["decisions_digest"]  # what it learned from
    env = make_env(spec.env)
    agent = load_agent(f"sac:{run}", env)
    obs = env.reset(seed=0, options={"time serie id": 0})
    assert 0 <= agent.choose(obs) < agent.space.n
    assert report["weights_digest"] == agent.sac.weights_digest()  # the networks it wrote
    np.testing.assert_allclose(agent.features.load_scale, load_dataset(out, agent.space).load_scale)
    assert days_learned(run) == mine_days(out) == ["000@0+16", "000@16+16", "000@32+16"]  # the mine's days


def test_a_clone_is_made_on_the_same_threads_whatever_the_callers(mined, tmp_path):
    spec, out, _ = mined
    reports, before = [], torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            run = tmp_path / f"bc-caller-{threads}"
            args = ["pretrain", "--env", spec.env, "--dataset", str(out), "--out", str(run), "--epochs", "2"]
            assert main(args) == 0
            assert torch.get_num_threads() == threads  # the caller's count, given back
            reports.append(json.loads((run / "pretrain.json").read_text()))
    finally:
        torch.set_num_threads(before)
    assert [report["kernels"]["threads"] for report in reports] == [CLONE_THREADS, CLONE_THREADS]
    assert reports[0]["weights_digest"] == reports[1]["weights_digest"]


def test_an_evaluation_refuses_the_days_its_policy_learned_from(mined, tmp_path, capsys):
    """With 15-step episodes the first validation scenario (steps 45-59 of the first chronic)
    plays the last steps of a day mined with 16-step episodes (steps 32-47): refused, nothing
    written; with the mine's own cut it plays."""
    spec, out, _ = mined
    run = tmp_path / "bc"
    assert (
        main(["pretrain", "--env", spec.env, "--dataset", str(out), "--out", str(run), "--epochs", "1"]) == 0
    )
    capsys.readouterr()
    evaluate = [
        "evaluate",
        "--env",
        spec.env,
        "--agent",
        f"sac:{run}",
        "--split",
        "validation",
        "--episodes",
        "1",
    ]
    assert main([*evaluate, "--episode-length", "15", "--out", str(tmp_path / "ev")]) == 2
    err = capsys.readouterr().err.strip()
    assert "validation scenario 000@45+15 plays steps of 000@32+16, a day policy" in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "ev").exists()
    assert main([*evaluate, "--episode-length", "16"]) == 0


def test_missing_corrupt_or_foreign_datasets_exit_2_and_write_nothing(mined, tmp_path, capsys):
    _, out, _ = mined
    corrupt = tmp_path / "dataset.npz"
    corrupt.write_text("not a dataset")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes((out / "dataset.npz").read_bytes()[:200])
    cases = [
        ("rte_case14_realistic", tmp_path / "missing", "no imitation dataset at"),
        ("rte_case14_realistic", corrupt, "is corrupt or not an imitation dataset"),
        ("rte_case14_realistic", truncated, "is corrupt or not an imitation dataset"),
        ("l2rpn_case14_sandbox", out, "use a dataset mined on the same env"),
    ]
    for env_name, dataset, message in cases:
        run = tmp_path / "run"
        assert main(["pretrain", "--env", env_name, "--dataset", str(dataset), "--out", str(run)]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
        assert not run.exists()


def test_an_action_weight_out_of_range_exits_2_and_writes_nothing(mined, tmp_path, capsys):
    spec, out, _ = mined
    run = tmp_path / "run"
    args = ["pretrain", "--env", spec.env, "--dataset", str(out), "--out", str(run), "--action-weight", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "--action-weight=0.0 is out of range; accepted: 0.01 to 100.0" in err and len(err.splitlines()) == 1
    )
    assert not run.exists()
