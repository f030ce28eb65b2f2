"""The imitation start: a run cloned from a mine before RL, resumed without cloning again, and
refusing a mine of another grid or a corrupt one before writing anything."""

import json
import shutil

import numpy as np
import pytest
import torch

from ace_core.checkpoint import load_checkpoint
from ace_core.cli import main
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import MemorySink, MetricsEvent
from ace_core.imitation.data import DatasetError
from ace_core.kernels import kernels_in_force
from ace_core.training import run
from ace_core.training.trainer import Trainer
from ace_core.workers import Workers
from tests.ace_core.conftest import MINE_ENV
from tests.sandbox_settings import sandbox_settings

# the mine's grid; a short run whose few decisions stay below learning_starts: no update moves the
# cloned actor, so the run's last actor is its first one
SHORT = dict(env=MINE_ENV, steps=30, hidden=64, learning_starts=32, batch_size=32, log_every=10)


def _pretrain_values(sink) -> list[dict]:
    return [m.values for m in sink.of_type(MetricsEvent) if any(k.startswith("pretrain/") for k in m.values)]


@pytest.fixture(scope="module")
def cloned_run(mined, tmp_path_factory):
    _, mine_dir, _ = mined
    out = tmp_path_factory.mktemp("imitation") / "run"
    sink = MemorySink()
    config = TrainConfig(**SHORT, pretrain_mine=str(mine_dir), pretrain_epochs=3)
    result = run(config, out, sink)
    return mine_dir, out, sink, result, config


def test_a_run_starts_from_the_policy_cloned_from_its_mine(cloned_run):
    mine_dir, out, sink, result, _ = cloned_run
    assert result.updates == 0
    cloned, run = load_checkpoint(out / "pretrain" / "checkpoint.pt"), load_checkpoint(out / "checkpoint.pt")
    for name, tensor in cloned["sac"]["actor"].items():
        assert torch.equal(run["sac"]["actor"][name], tensor), name
    report = json.loads((out / "pretrain" / "pretrain.json").read_text())
    assert report["clone"]["epochs"] == 3 and report["kernels"] == kernels_in_force()
    # the feature scale is the mine's, as with init_from
    np.testing.assert_allclose(run["features"]["load_scale"], cloned["features"]["load_scale"])
    # the phases reach the sink before RL
    phases = _pretrain_values(sink)
    assert [v["pretrain/cloning"] for v in phases] == [0.0, 1.0] and "pretrain/agreement_after" in phases[-1]
    assert all(m.step == 0 for m in sink.of_type(MetricsEvent) if "pretrain/cloning" in m.values)


def test_a_resumed_imitation_run_neither_mines_nor_clones_again(cloned_run):
    _, out, _, _, config = cloned_run
    pretrain_file = out / "pretrain" / "checkpoint.pt"
    written = pretrain_file.stat().st_mtime_ns
    sink = MemorySink()
    resumed = run(TrainConfig.from_dict({**config.to_dict(), "steps": 40}), out, sink, resume=True)
    assert resumed.steps == 40 and not _pretrain_values(sink)
    assert pretrain_file.stat().st_mtime_ns == written


def test_a_run_of_zero_steps_is_its_clone_validated(mined, tmp_path):
    _, mine_dir, _ = mined
    config = TrainConfig(
        **{**SHORT, "steps": 0}, pretrain_mine=str(mine_dir), pretrain_epochs=3, validate_every=500
    )
    result = run(config, tmp_path / "run", MemorySink())
    assert (result.steps, result.decisions, result.updates) == (0, 0, 0)
    assert result.best_decisions == 0 and result.best_validation_survival is not None
    cloned, best = (
        load_checkpoint(tmp_path / "run" / "pretrain" / "checkpoint.pt"),
        load_checkpoint(result.best_checkpoint),
    )
    for name, tensor in cloned["sac"]["actor"].items():
        assert torch.equal(best["sac"]["actor"][name], tensor), name


def test_a_run_of_zero_steps_needs_an_imitation_start():
    with pytest.raises(ConfigError, match="steps=0 is a clone-only run .* needs pretrain_mine"):
        TrainConfig(**{**SHORT, "steps": 0}).validate()


def test_a_mine_of_another_grid_or_a_corrupt_one_is_refused_before_anything_is_written(
    mined, tmp_path, capsys
):
    _, mine_dir, _ = mined
    with pytest.raises(DatasetError, match="use a dataset mined on the same env"):
        Trainer(TrainConfig(**sandbox_settings(pretrain_mine=str(mine_dir))), tmp_path / "foreign")
    corrupt = tmp_path / "corrupt-mine"
    corrupt.mkdir()
    shutil.copy(mine_dir / "summary.json", corrupt / "summary.json")
    (corrupt / "dataset.npz").write_bytes((mine_dir / "dataset.npz").read_bytes()[:200])
    out = tmp_path / "run"
    args = ["train", "--env", MINE_ENV, "--steps", "30", "--pretrain-mine", str(corrupt), "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "is corrupt or not an imitation dataset" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_an_imitation_start_cannot_take_an_action_subset(mined, tmp_path):
    _, mine_dir, _ = mined
    subset = tmp_path / "subset.txt"
    subset.write_text("0\n")
    with pytest.raises(ConfigError, match="leave action_subset empty"):
        TrainConfig(env=MINE_ENV, pretrain_mine=str(mine_dir), action_subset=str(subset)).validate()


def test_an_auto_mine_is_mined_on_the_runs_episode_length(tmp_path):
    from ace_core.imitation.mining import MineSpec
    from ace_core.imitation.pretrain import ImitationStart

    def auto_mine(**settings):
        (only,) = ImitationStart(TrainConfig(**SHORT, pretrain_mine="auto", **settings), tmp_path).mine_dirs()
        return only

    three_days = MineSpec(env=MINE_ENV, seeds=2, episode_length=864).default_dir().resolve()
    assert auto_mine(episode_length=864) == three_days != auto_mine()
    assert auto_mine() == MineSpec(env=MINE_ENV, seeds=2).default_dir().resolve()
    attacked = MineSpec(env=MINE_ENV, seeds=2, opponent="random-line").default_dir().resolve()
    assert auto_mine(opponent="random-line") == attacked != auto_mine()


def test_a_runs_own_mines_are_mined_on_the_workers_it_is_given(tmp_path):
    config = TrainConfig(**SHORT, pretrain_mine="auto")
    assert Trainer(config, tmp_path / "one").imitation.workers == Workers(1)
    two = Workers(2)  # train --workers 2
    assert Trainer(config, tmp_path / "two", workers=two).imitation.workers == two


def test_auto_mines_the_heavier_days_too_each_in_the_mine_the_command_line_would_make(tmp_path):
    from ace_core.imitation.mining import MineSpec
    from ace_core.imitation.pretrain import ImitationStart

    config = TrainConfig(**SHORT, pretrain_mine="auto", pretrain_demand_scales="1.05, 1.1").validate()
    assert config.pretrain.scales() == (1.0, 1.05, 1.1)
    assert ImitationStart(config, tmp_path).mine_dirs() == [
        MineSpec(env=MINE_ENV, seeds=2, demand_scale=scale).default_dir().resolve()
        for scale in (1.0, 1.05, 1.1)
    ]


def test_auto_mines_the_attacked_days_too(tmp_path):
    from ace_core.imitation.mining import MineSpec
    from ace_core.imitation.pretrain import ImitationStart

    config = TrainConfig(
        **SHORT, pretrain_mine="auto", pretrain_demand_scales="1.1", pretrain_attacks="storm:cooldown=36"
    ).validate()
    assert ImitationStart(config, tmp_path).mine_dirs() == [
        MineSpec(env=MINE_ENV, seeds=2).default_dir().resolve(),
        MineSpec(env=MINE_ENV, seeds=2, demand_scale=1.1).default_dir().resolve(),
        MineSpec(env=MINE_ENV, seeds=2, opponent="storm:cooldown=36").default_dir().resolve(),
    ]


def test_the_attacked_days_mine_takes_its_own_grid_seeds(tmp_path):
    """pretrain_attack_seeds mines the attacked days with more grid seeds (more attacks drawn)
    than the other mines, whose cache entries stay those of runs without it."""
    from ace_core.imitation.mining import MineSpec
    from ace_core.imitation.pretrain import ImitationStart

    config = TrainConfig(
        **SHORT, pretrain_mine="auto", pretrain_attacks="random-line", pretrain_attack_seeds=6
    ).validate()
    assert ImitationStart(config, tmp_path).mine_dirs() == [
        MineSpec(env=MINE_ENV, seeds=2).default_dir().resolve(),
        MineSpec(env=MINE_ENV, seeds=6, opponent="random-line").default_dir().resolve(),
    ]


def test_a_run_under_attacks_mines_the_days_as_the_env_plays_them_with_pretrain_opponent(tmp_path):
    """By default the auto mines play under the run's own opponent; pretrain_opponent sets them
    apart, so a run under the storm clones from the mines of a run on the days as they are."""
    from ace_core.imitation.mining import MineSpec
    from ace_core.imitation.pretrain import ImitationStart

    storm = {**SHORT, "opponent": "storm", "pretrain_mine": "auto", "pretrain_demand_scales": "1.1"}
    assert ImitationStart(TrainConfig(**storm).validate(), tmp_path).mine_dirs() == [
        MineSpec(env=MINE_ENV, seeds=2, opponent="storm", demand_scale=scale).default_dir().resolve()
        for scale in (1.0, 1.1)
    ]
    apart = TrainConfig(**storm, pretrain_opponent="env").validate()
    assert ImitationStart(apart, tmp_path).mine_dirs() == [
        MineSpec(env=MINE_ENV, seeds=2, demand_scale=scale).default_dir().resolve() for scale in (1.0, 1.1)
    ]


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"pretrain_mine": "auto", "pretrain_opponent": "hail"},
            "pretrain_opponent: unknown opponent 'hail'; accepted: env, none",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_opponent": "storm:gust=3"},
            "pretrain_opponent: opponent storm: unknown setting 'gust'",
        ),
        (
            {"pretrain_opponent": "env"},
            "pretrain_opponent is the opponent auto mines play under; set pretrain_mine=auto",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "hail"},
            "pretrain_attacks: unknown opponent 'hail'; accepted: env, none",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "storm:gust=3"},
            "pretrain_attacks: opponent storm: unknown setting 'gust'",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "none"},
            "pretrain_attacks: 'none' makes no attacks; accepted: random-line",
        ),
        (
            {"pretrain_attacks": "storm"},
            "pretrain_attacks are attacked days auto mines; set pretrain_mine=auto",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attack_seeds": 6},
            "pretrain_attack_seeds are the grid seeds of the attacked days' mine; set pretrain_attacks",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "storm", "pretrain_attack_seeds": -1},
            "pretrain_attack_seeds=-1 is out of range; accepted: 0 to 1000",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "storm:cooldown=48", "opponent": "storm"},
            "pretrain_attacks 'storm:cooldown=48' is the opponent the days as they are are mined under",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "storm", "pretrain_opponent": "storm"},
            "pretrain_attacks 'storm' is the opponent the days as they are are mined under",
        ),
    ],
)
def test_bad_pretrain_opponents_and_attacks_say_what_is_accepted(settings, message):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**SHORT, **settings).validate()
    assert message in str(info.value)


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"pretrain_mine": "auto", "pretrain_demand_scales": "1.5"},
            "demand scale 1.5 is out of range; accepted: 0.8 to 1.3",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_demand_scales": "heavy"},
            "demand scale 'heavy' must be a number",
        ),
        ({"pretrain_mine": "auto", "pretrain_demand_scales": "1.1,1.1"}, "1.1 is given twice"),
        (
            {"pretrain_mine": "auto", "pretrain_demand_scales": "1"},
            "1.0 is given (the days as they are are always mined)",
        ),
        ({"pretrain_demand_scales": "1.1"}, "set pretrain_mine=auto, or mine heavier days"),
    ],
)
def test_bad_pretrain_demand_scales_say_what_is_accepted(settings, message):
    with pytest.raises(ConfigError, match="pretrain_demand_scales") as info:
        TrainConfig(**SHORT, **settings).validate()
    assert message in str(info.value)
