"""DAgger: mines a policy plays and the expert labels, cloning on several mines, and the loop."""

import json
import shutil

import numpy as np
import pytest

from ace_core.agents.expert import expert_from_spec
from ace_core.agents.loading import load_agent
from ace_core.checkpoint import load_checkpoint, save_checkpoint
from ace_core.cli import main
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.imitation.cloning import split_by_day
from ace_core.imitation.data import concat_datasets, load_dataset, save_npz_atomic
from ace_core.imitation.mining import MineSpec, episode_file, mine
from ace_core.workers import Workers


@pytest.fixture(scope="module")
def player(mined, tmp_path_factory):
    """A policy cloned (briefly) from the tiny mine: the player of the DAgger mines."""
    spec, out, _ = mined
    run = tmp_path_factory.mktemp("player") / "bc"
    args = ["pretrain", "--env", spec.env, "--dataset", str(out), "--out", str(run), "--epochs", "3"]
    assert main(args) == 0
    # the tiny mine's days sit at max rho 0.7-0.88: a player deciding from 0.5 decides at every step
    state = load_checkpoint(run)
    state["config"]["rho_threshold"] = 0.5
    save_checkpoint({k: v for k, v in state.items() if k != "format"}, run / "checkpoint.pt")
    return run


@pytest.fixture(scope="module")
def player_mine(mined, player, tmp_path_factory):
    """(spec, directory, summary) of a mine of two of the tiny mine's days, played by ``player``."""
    spec, _, _ = mined
    dagger_spec = MineSpec(
        env=spec.env, expert=spec.expert, episodes=2, episode_length=spec.episode_length, player=str(player)
    )
    out = tmp_path_factory.mktemp("dagger-mine") / "rte14"
    return dagger_spec, out, mine(dagger_spec, out, workers=Workers(2), log=lambda text: None)


def test_a_player_mine_plays_the_policy_and_labels_its_states_with_the_expert(player_mine, player):
    spec, out, summary = player_mine
    env = make_env(spec.env)
    agent = load_agent(f"sac:{player}", env)
    expert = expert_from_spec(spec.expert, agent.space, env.action_space)
    assert summary["decisions"] > 0
    assert json.loads((out / "mine.json").read_text())["player_file"] == str(
        (player / "checkpoint.pt").resolve()
    )
    assert summary["mine"]["player_file"] == str((player / "checkpoint.pt").resolve())
    labelled, disagreements = 0, 0
    for scenario in scenarios(env, "train", spec.episode_length)[:2]:
        with np.load(episode_file(out, scenario, 0)) as data:
            record = {k: data[k] for k in data.files}
        np.testing.assert_allclose(record["load_scale"], agent.features.load_scale)
        obs, done = reset_to(env, scenario, 0), False
        expert.played.clear()
        for step, played in enumerate(record["played"]):
            search = expert.search(obs)  # at every step, as the mine did
            assert agent.choose(obs) == played  # what was played is the policy's action
            rows = np.flatnonzero(record["step"] == step)
            if len(rows):
                assert search.action == record["action"][rows[0]]  # the label is the expert's
                np.testing.assert_array_equal(
                    agent.features(obs), record["features"][rows[0]]
                )  # the policy's own inputs
                labelled += 1
                disagreements += int(played != search.action)
            obs, _, done, _ = env.step(agent.space.to_grid2op(int(played), env.action_space))
        assert done or len(record["played"]) == spec.episode_length
    assert labelled == summary["decisions"]
    assert agent.stats["decisions"] == labelled  # the policy decided wherever the expert did
    assert disagreements > 0  # so these are the policy's episodes, not the expert's


def test_a_mine_is_keyed_by_its_players_content_and_by_its_inputs_without_one(mined, player, tmp_path):
    spec, _, _ = mined
    assert "player" not in spec.key()
    keys = {"format", "env", "expert", "split", "episodes", "seeds", "episode_length", "features"}
    assert set(spec.key()) == keys and spec.key()["features"] == "overflow"
    same = tmp_path / "same.pt"
    shutil.copyfile(player / "checkpoint.pt", same)
    other = tmp_path / "other.pt"
    other.write_bytes((player / "checkpoint.pt").read_bytes() + b"\x00")
    with_player = MineSpec(env=spec.env, expert=spec.expert, player=str(player))
    assert with_player.key() == MineSpec(env=spec.env, expert=spec.expert, player=str(same)).key()
    assert with_player.key() != MineSpec(env=spec.env, expert=spec.expert, player=str(other)).key()
    assert with_player.digest() != MineSpec(env=spec.env, expert=spec.expert).digest()
    assert "features" not in with_player.key()  # a player's mine holds its player's inputs


def test_a_player_from_another_grid_is_refused_before_anything_is_written(player, tmp_path, capsys):
    target = tmp_path / "mine"
    args = ["mine", "--env", "l2rpn_case14_sandbox", "--player", str(player), "--out", str(target)]
    assert main([*args, "--episodes", "1", "--episode-length", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "use a checkpoint trained on the same env" in err and len(err.splitlines()) == 1
    assert not target.exists()


def test_pretrain_on_two_mines_clones_on_all_their_decisions_with_the_same_days_held_out(
    mined, player_mine, tmp_path, capsys
):
    spec, first, first_summary = mined
    _, second, second_summary = player_mine
    run = tmp_path / "bc2"
    args = [
        "pretrain",
        "--env",
        spec.env,
        "--dataset",
        str(first),
        "--dataset",
        str(second),
        "--out",
        str(run),
    ]
    assert main([*args, "--epochs", "2"]) == 0
    report = json.loads((run / "pretrain.json").read_text())
    total = first_summary["decisions"] + second_summary["decisions"]
    assert report["decisions"] == report["train_decisions"] + report["held_out_decisions"] == total
    assert report["decisions_by_dataset"] == [first_summary["decisions"], second_summary["decisions"]]
    # days match by scenario: a day held out in one mine is held out in the other
    space = load_agent(f"sac:{run}", make_env(spec.env)).space
    dataset = concat_datasets([(str(p), load_dataset(p, space)) for p in (first, second)])
    train_rows, held_rows = split_by_day(dataset)
    names = dataset.arrays["day_name"]
    assert not set(names[dataset.arrays["day"][train_rows]]) & set(names[dataset.arrays["day"][held_rows]])
    assert len(names) == 3  # the player mine played two of the first mine's three days


def test_datasets_of_different_feature_scales_are_refused(mined, tmp_path, capsys):
    spec, first, _ = mined
    with np.load(first / "dataset.npz") as data:
        arrays = {k: data[k] for k in data.files}
    save_npz_atomic(tmp_path / "scaled" / "dataset.npz", **{**arrays, "load_scale": arrays["load_scale"] * 2})
    run = tmp_path / "run"
    args = ["pretrain", "--env", spec.env, "--dataset", str(first), "--dataset", str(tmp_path / "scaled")]
    assert main([*args, "--out", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert "another feature scale" in err and len(err.splitlines()) == 1
    assert not run.exists()


def test_a_mine_from_before_the_overflow_block_clones_a_policy_without_it_and_mixes_with_no_new_one(
    mined, tmp_path, capsys
):
    spec, first, _ = mined
    env = make_env(spec.env)
    with np.load(first / "dataset.npz") as data:
        arrays = {k: data[k] for k in data.files if k != "overflow"}
    arrays["features"] = arrays["features"][:, : -env.n_line]  # the inputs policies had before it
    old = tmp_path / "old-mine"
    save_npz_atomic(old / "dataset.npz", **arrays)
    run = tmp_path / "run"
    assert (
        main(["pretrain", "--env", spec.env, "--dataset", str(old), "--out", str(run), "--epochs", "1"]) == 0
    )
    agent = load_agent(f"sac:{run}", env)
    assert not agent.features.overflow and agent.features.size == arrays["features"].shape[1]
    obs = env.reset(seed=0, options={"time serie id": 0})
    assert 0 <= agent.choose(obs) < agent.space.n
    capsys.readouterr()
    args = ["pretrain", "--env", spec.env, "--dataset", str(first), "--dataset", str(old)]
    assert main([*args, "--out", str(tmp_path / "mixed")]) == 2
    err = capsys.readouterr().err.strip()
    assert "another feature scale or layout" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "mixed").exists()


def test_dagger_clones_mines_with_the_policy_clones_again_and_resumes(mined, tmp_path, capsys):
    spec, first, first_summary = mined
    out = tmp_path / "dagger"
    args = ["dagger", "--env", spec.env, "--dataset", str(first), "--rounds", "1", "--seeds", "1"]
    args += ["--out", str(out), "--workers", "2", "--epochs", "2"]
    assert main(args) == 0
    for name in ("round-0/checkpoint.pt", "mine-1/summary.json", "round-1/checkpoint.pt", "checkpoint.pt"):
        assert (out / name).is_file(), name
    result = json.loads((out / "dagger.json").read_text())
    rounds = result["rounds"]
    assert [r["round"] for r in rounds] == [0, 1] and result["result"] == str(out / "round-1")
    assert rounds[0]["decisions"] == first_summary["decisions"]
    assert rounds[1]["decisions"] == first_summary["decisions"] + rounds[1]["mine"]["decisions"]
    assert all(0 <= r["held_out_agreement"] <= 1 for r in rounds)
    mine_settings = json.loads((out / "mine-1" / "mine.json").read_text())
    assert mine_settings["expert"] == json.loads((first / "mine.json").read_text())["expert"]
    assert mine_settings["player_file"] == str(out / "round-0" / "checkpoint.pt")
    assert (out / "checkpoint.pt").read_bytes() == (out / "round-1" / "checkpoint.pt").read_bytes()
    assert load_agent(f"sac:{out}", make_env(spec.env)).space.n > 0
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.pt") if p.parent != out}
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "round 0: reusing" in err and "round 1: reusing" in err and "reusing the complete mine" in err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.pt") if p.parent != out} == stamps
    assert json.loads((out / "dagger.json").read_text())["rounds"] == rounds


def test_dagger_clones_further_mines_in_every_round_and_plays_only_the_first_mines_days(
    mined, player_mine, tmp_path, capsys
):
    spec, first, first_summary = mined
    _, second, second_summary = player_mine
    out = tmp_path / "dagger"
    args = ["dagger", "--env", spec.env, "--dataset", str(first), "--dataset", str(second)]
    args += ["--rounds", "1", "--seeds", "1", "--out", str(out), "--workers", "1", "--epochs", "2"]
    assert main(args) == 0
    result = json.loads((out / "dagger.json").read_text())
    rounds = result["rounds"]
    both = first_summary["decisions"] + second_summary["decisions"]
    assert rounds[0]["decisions"] == both
    # the round's mine plays the first mine's three days, not the further mine's two
    assert rounds[1]["mine"]["episodes"] == first_summary["episodes"] == 3
    assert rounds[1]["decisions"] == both + rounds[1]["mine"]["decisions"]
    assert rounds[1]["datasets"] == [str(first), str(second), str(out / "mine-1")]
    assert result["settings"]["more_datasets"] == [str(second)]
    # a DAgger directory is bound to its further mines
    capsys.readouterr()
    assert main(["dagger", "--env", spec.env, "--dataset", str(first), *args[7:]]) == 2
    assert "holds a DAgger run of other settings" in capsys.readouterr().err


def test_dagger_refuses_a_missing_further_mine_before_writing(mined, tmp_path, capsys):
    spec, first, _ = mined
    out = tmp_path / "dagger"
    args = ["dagger", "--env", spec.env, "--dataset", str(first), "--dataset", str(tmp_path / "nowhere")]
    assert main([*args, "--rounds", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "nowhere" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_dagger_refuses_a_mine_without_day_names_before_writing(mined, tmp_path, capsys):
    spec, first, _ = mined
    old = tmp_path / "old-mine"
    shutil.copytree(first, old)
    with np.load(first / "dataset.npz") as data:
        arrays = {k: data[k] for k in data.files if k != "day_name"}
    save_npz_atomic(old / "dataset.npz", **arrays)
    out = tmp_path / "dagger"
    assert main(["dagger", "--env", spec.env, "--dataset", str(old), "--rounds", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not name its days" in err and "run the same mine again" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_dagger_directory_is_bound_to_its_cloning_weight_and_older_ones_still_match(tmp_path):
    from ace_core.imitation.cloning import CloneConfig
    from ace_core.imitation.dagger import DaggerSpec, settings_of

    plain = settings_of(DaggerSpec(env="rte_case14_realistic", dataset="m", expert="greedy"), tmp_path)
    weighted = settings_of(
        DaggerSpec(
            env="rte_case14_realistic", dataset="m", expert="greedy", clone=CloneConfig(action_weight=6.0)
        ),
        tmp_path,
    )
    # a directory written before the weight existed holds no action_weight: the default matches it
    assert "action_weight" not in plain["clone"] and weighted["clone"]["action_weight"] == 6.0
    assert plain != weighted
