"""Mining with Ray in local mode: the action set, a dataset that replays, resume, lost workers, bad input."""

import json
import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from ace_core.cli import main
from ace_core.grid.action_set import load_action_set
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.imitation.data import load_dataset
from ace_core.imitation.mining import EpisodeWorker, MineSpec, episode_file, mine
from ace_core.workers import Workers
from tests.ace_core.opponent_state import attack_under_way


def test_a_mine_writes_an_action_set_with_coverage_and_a_dataset(mined):
    spec, out, summary = mined
    env = make_env(spec.env)
    space = build_action_space(env)
    dataset = load_dataset(out, space)
    assert summary["episodes"] == 3 and summary["decisions"] == len(dataset) > 0
    # the digest of the decisions, which any changed bit of a state changes
    assert summary["decisions_digest"] == dataset.digest()
    dataset.features[0, 0] = np.nextafter(dataset.features[0, 0], np.float32(np.inf))
    assert dataset.digest() != summary["decisions_digest"]
    assert (out / "summary.json").exists() and (out / "mine.json").exists()
    data = json.loads((out / "action_set.json").read_text())
    played = dataset.actions[dataset.actions >= space.first_topology]
    assert data["decisions"] == len(played) > 0
    # most frequent first, counts add up to the expert's topology decisions
    counts = [count for _, count in data["actions"]]
    assert counts == sorted(counts, reverse=True) and sum(counts) == len(played)
    assert data["coverage"]["10"] == pytest.approx(sum(counts[:10]) / len(played))
    assert load_action_set(out / "action_set.json", space) == [index for index, _ in data["actions"]]
    # every decision: the expert's action is legal, among its candidates, and the best simulated one
    for row in range(len(dataset)):
        indices, max_rho = dataset.candidates(row)
        action = dataset.actions[row]
        assert dataset.legal([row])[0, action]
        assert action in indices
        assert max_rho[list(indices).index(action)] == pytest.approx(np.min(np.round(max_rho, 3)), abs=1e-3)


def test_the_expert_actions_of_a_mine_replay_to_the_recorded_outcomes(mined):
    spec, out, _ = mined
    assert _replayed_decisions(out, spec, make_env(spec.env)) > 0


def test_a_mine_of_heavier_days_is_keyed_apart_and_replays_on_those_days(mined, tmp_path):
    from ace_core.imitation.dagger import DaggerSpec, round_spec

    spec, _, _ = mined
    heavy = MineSpec(env=spec.env, expert=spec.expert, episodes=2, episode_length=16, demand_scale=1.2)
    # a mine of the days as they are keeps its key (and cache directory)
    assert "demand_scale" not in spec.key() and heavy.key()["demand_scale"] == 1.2
    out = tmp_path / "heavy"
    summary = mine(heavy, out, workers=Workers(1), log=lambda text: None)
    assert json.loads((out / "mine.json").read_text())["demand_scale"] == 1.2
    # the recorded outcomes are those of the heavier days, not of the days as they are
    assert _replayed_decisions(out, heavy, make_env(spec.env, demand_scale=1.2)) > 0
    with pytest.raises(AssertionError):
        _replayed_decisions(out, heavy, make_env(spec.env))
    assert summary["decisions"] > 0
    dagger = DaggerSpec(env=spec.env, dataset="m", expert=spec.expert)
    assert round_spec(dagger, heavy.key(), tmp_path).demand_scale == 1.2
    assert round_spec(dagger, spec.key(), tmp_path).demand_scale == 1.0


def _replayed_decisions(out, spec, env) -> int:
    """Play the second episode's recorded actions on ``env``; each decision's simulated outcome must
    be the recorded one. Returns how many decisions were replayed."""
    space = build_action_space(env)
    scenario = scenarios(env, "train", spec.episode_length)[1]
    with np.load(episode_file(out, scenario, 0)) as data:
        record = {k: data[k] for k in data.files}
    assert len(record["action"]) > 0
    obs = reset_to(env, scenario, 0)
    replayed = 0
    for step, played in enumerate(record["played"]):
        rows = np.flatnonzero(record["step"] == step)
        if len(rows):
            row = int(rows[0])
            assert played == record["action"][row]
            start, end = record["cand_offsets"][row], record["cand_offsets"][row + 1]
            outcomes = dict(zip(record["cand_index"][start:end], record["cand_max_rho"][start:end]))
            sim_obs, _, done, _ = obs.simulate(space.to_grid2op(int(played), env.action_space))
            assert not done
            assert float(sim_obs.rho.max()) == pytest.approx(outcomes[played], abs=1e-5)
            replayed += 1
        obs, _, done, _ = env.step(space.to_grid2op(int(played), env.action_space))
    return replayed


def test_an_interrupted_mine_resumes_and_gives_the_same_dataset(mined, tmp_path):
    spec, out, _ = mined
    copy = tmp_path / "mine"
    shutil.copytree(out, copy)
    # stopped while the second episode was being written, before the dataset was joined
    env = make_env(spec.env)
    second = scenarios(env, "train", spec.episode_length)[1]
    lost = episode_file(copy, second, 0)
    lost.unlink()
    (copy / "episodes" / "half-written.tmp").write_bytes(b"\x00" * 10)
    lost.with_name(lost.name + ".playing").write_text("12345")
    for name in ("summary.json", "dataset.npz", "action_set.json"):
        (copy / name).unlink()
    logs = []
    summary = mine(spec, copy, workers=Workers(1), log=logs.append)
    assert summary["episodes_played_now"] == 1
    assert summary["decisions_digest"] == mined[2]["decisions_digest"]
    assert any("2 already on disk" in line for line in logs)
    with np.load(out / "dataset.npz") as a, np.load(copy / "dataset.npz") as b:
        for key in ("features", "legal", "action", "cand_index", "cand_max_rho"):
            np.testing.assert_array_equal(a[key], b[key])
    # complete: asked again, nothing is played
    assert mine(spec, copy, workers=Workers(1), log=logs.append)["episodes_played_now"] == 1
    assert "reusing the complete mine" in logs[-1]


def test_a_worker_records_an_episode_as_a_fresh_worker_would_after_one_ending_under_attack(mined):
    """One env plays all of a worker's episodes: an attack under way when one ends stays out of
    the next, so a record does not depend on which episodes the worker played before."""
    spec, _, _ = mined
    spec = MineSpec(**{**vars(spec), "opponent": "storm", "episode_length": 288})
    features = FeatureBuilder(make_env(spec.env)).state_dict()
    worker, fresh = EpisodeWorker(spec, features), EpisodeWorker(spec, features)
    first, later = [s for s in scenarios(worker.env, "train", 288) if s.start > 1][:2]
    worker.play(first, 0)
    attack_under_way(worker.env, line=3)  # as an episode ending under attack
    after, alone = worker.play(later, 1), fresh.play(later, 1)
    assert after["played"].tolist() == alone["played"].tolist()
    np.testing.assert_array_equal(after["features"], alone["features"])


def test_a_worker_killed_mid_episode_loses_only_that_episode(mined, tmp_path):
    spec, out, _ = mined
    target = tmp_path / "mine"
    killed = []

    def kill_first_player():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for marker in (target / "episodes").glob("*.playing") if target.exists() else []:
                try:
                    pid = int(marker.read_text().split()[-1])
                except (OSError, ValueError):
                    continue
                os.kill(pid, signal.SIGKILL)
                killed.append(marker.name)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=kill_first_player)
    thread.start()
    logs = []
    summary = mine(spec, target, workers=Workers(2), log=logs.append)
    thread.join()
    assert killed and any("a worker died" in line for line in logs)
    assert summary["episodes"] == 3
    with np.load(out / "dataset.npz") as a, np.load(target / "dataset.npz") as b:
        np.testing.assert_array_equal(a["action"], b["action"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "atlantis"], "unknown env 'atlantis'"),
        (
            ["--env", "l2rpn_case14_sandbox", "--expert", "wizard"],
            "unknown expert 'wizard'; accepted: greedy",
        ),
        (["--env", "l2rpn_case14_sandbox", "--expert", "greedy:depth=3"], "accepted: greedy, greedy:BUDGET"),
        (
            ["--env", "l2rpn_case14_sandbox", "--ray-address", "127.0.0.1:9"],
            "no Ray cluster answers at 127.0.0.1:9",
        ),
        (["--env", "l2rpn_case14_sandbox", "--ray-address", "nowhere"], "is not HOST:PORT"),
        (["--env", "l2rpn_case14_sandbox", "--workers", "0"], "--workers 0 must be at least 1"),
        (
            ["--env", "l2rpn_case14_sandbox", "--opponent", "pirate"],
            "unknown opponent 'pirate'; accepted: env, none, random-line",
        ),
        (
            ["--env", "l2rpn_case14_sandbox", "--demand-scale", "2"],
            "demand scale 2.0 is out of range; accepted: 0.8 to 1.3",
        ),
    ],
)
def test_bad_mine_input_exits_2_with_one_line_and_leaves_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "mine"
    assert main(["mine", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_an_action_set_from_another_grid_is_refused(mined, tmp_path, capsys):
    _, out, _ = mined
    target = tmp_path / "mine"
    expert = f"greedy:actions={out / 'action_set.json'}"
    assert main(["mine", "--env", "l2rpn_case14_sandbox", "--expert", expert, "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "was mined on 'rte_case14_realistic:" in err and "use a set mined on the same env" in err
    assert not target.exists()


def test_a_directory_holding_another_mine_is_refused(mined, capsys):
    spec, out, _ = mined
    other = MineSpec(env=spec.env, expert=spec.expert, episodes=2, episode_length=spec.episode_length)
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(Exception, match="holds a mine of other settings"):
        mine(other, out, log=lambda text: None)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_a_mine_is_keyed_by_the_expert_settings_not_their_spelling(mined):
    spec, _, _ = mined
    same = MineSpec(env=spec.env, expert="greedy:budget=3000,threshold=0.7", episodes=3, episode_length=16)
    other = MineSpec(env=spec.env, expert="greedy:threshold=0.8", episodes=3, episode_length=16)
    assert same.key() == spec.key() and same.default_dir() == spec.default_dir()
    assert other.key() != spec.key()


def test_a_corrupt_episode_file_is_named_and_nothing_looks_complete(mined, tmp_path):
    spec, out, _ = mined
    copy = tmp_path / "mine"
    shutil.copytree(out, copy)
    for name in ("summary.json", "dataset.npz", "action_set.json"):
        (copy / name).unlink()
    env = make_env(spec.env)
    broken = episode_file(copy, scenarios(env, "train", spec.episode_length)[0], 0)
    broken.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(Exception, match="is corrupt.*delete it and run the mine again"):
        mine(spec, copy, log=lambda text: None)
    assert not (copy / "summary.json").exists() and not (copy / "dataset.npz").exists()


def test_a_mine_under_line_attacks_is_keyed_apart_and_its_dagger_rounds_are_attacked_too(mined, tmp_path):
    from ace_core.imitation.dagger import DaggerSpec, round_spec

    spec, _, _ = mined
    attacked = MineSpec(
        env=spec.env, expert=spec.expert, episodes=3, episode_length=16, opponent="random-line"
    )
    # a mine of the env as it is keeps the key (and cache directory) it had before opponents existed
    assert "opponent" not in spec.key() and attacked.key()["opponent"] == "random-line"
    assert attacked.default_dir() != spec.default_dir()
    dagger = DaggerSpec(env=spec.env, dataset="m", expert=spec.expert)
    assert round_spec(dagger, attacked.key(), tmp_path).opponent == "random-line"
    assert round_spec(dagger, spec.key(), tmp_path).opponent == "env"


def test_the_mine_of_an_expert_beyond_topology_is_keyed_as_playing_its_moves(mined):
    spec, *_ = mined
    flex = MineSpec(env=spec.env, expert="greedy:flex=4", episodes=3, episode_length=16)
    assert flex.key()["moves"] == "played" and "moves" not in spec.key()
