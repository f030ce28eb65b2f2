import dataclasses
import json

import numpy as np
import pytest
import torch

from ace_core.checkpoint import days_learned, load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import CheckpointError, ConfigError
from ace_core.events import CheckpointEvent, EpisodeEvent, MemorySink, MetricsEvent
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.kernels import kernels_in_force
from ace_core.training import run
from ace_core.training.setup import build_parts, run_days
from tests.sandbox_settings import sandbox_settings

TINY = sandbox_settings(steps=400, checkpoint_every=200)


def _params(path):
    return load_checkpoint(path)["sac"]["actor"]


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    sink = MemorySink()
    result = run(TrainConfig(**TINY), out, sink)
    return out, sink, result


def test_a_run_reports_learns_and_checkpoints(straight_run):
    out, sink, result = straight_run
    assert result.steps == 400 and result.updates > 0 and not result.stopped
    metrics = sink.of_type(MetricsEvent)
    assert [m.step for m in metrics] == [100, 200, 300, 400]
    assert "losses/qf1_loss" in metrics[-1].values and "charts/SPS" in metrics[-1].values
    episodes = sink.of_type(EpisodeEvent)
    assert episodes and all(0 < e.steps_survived <= e.max_steps for e in episodes)
    assert [c.step for c in sink.of_type(CheckpointEvent)] == [200, 400, 400]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 400
    assert summary["kernels"] == kernels_in_force()  # what the run's figures were computed on
    config = TrainConfig(**TINY)
    train_days = scenarios(make_env(config.env), "train", config.episode_length)
    assert days_learned(out) == sorted(day.name for day in train_days)  # what evaluations refuse


def test_same_seed_same_result(straight_run, tmp_path):
    out, _, _ = straight_run
    run(TrainConfig(**TINY), tmp_path, MemorySink())
    a, b = _params(out), _params(tmp_path)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_continues_exactly(straight_run, tmp_path):
    out, straight_sink, _ = straight_run
    first = run(TrainConfig(**{**TINY, "steps": 250}), tmp_path, MemorySink())
    assert first.steps == 250
    sink = MemorySink()
    resumed = run(TrainConfig(**TINY), tmp_path, sink, resume=True)
    assert resumed.steps == 400
    a, b = _params(out), _params(tmp_path)
    assert all(torch.equal(a[k], b[k]) for k in a)
    straight = load_checkpoint(out)
    again = load_checkpoint(tmp_path)
    assert (straight["buffer"]["actions"] == again["buffer"]["actions"]).all()
    assert straight["loop"]["episode"] == again["loop"]["episode"]
    assert sink.of_type(EpisodeEvent) == [e for e in straight_sink.of_type(EpisodeEvent) if e.step > 250]


def test_a_run_under_line_attacks_resumes_exactly(tmp_path):
    """Episodes end under an attack (every hour, the agent acting only above 0.95): the episode
    under way at the checkpoint starts as it did, not under the attack its predecessor ended in."""
    stormy = sandbox_settings(
        steps=500, checkpoint_every=100, rho_threshold=0.95, opponent="storm:cooldown=12"
    )
    straight_sink = MemorySink()
    run(TrainConfig(**stormy), tmp_path / "straight", straight_sink)
    run(TrainConfig(**{**stormy, "steps": 400}), tmp_path / "resumed")
    sink = MemorySink()
    run(TrainConfig(**stormy), tmp_path / "resumed", sink, resume=True)
    assert sink.of_type(EpisodeEvent) == [e for e in straight_sink.of_type(EpisodeEvent) if e.step > 400]
    straight, again = load_checkpoint(tmp_path / "straight"), load_checkpoint(tmp_path / "resumed")
    assert (straight["buffer"]["actions"] == again["buffer"]["actions"]).all()


def test_a_resume_drops_the_log_lines_written_after_the_checkpoint(tmp_path):
    """Whoever resumes (command line, experiment, web worker), what an interrupted attempt logged
    after its last checkpoint is logged again, once."""
    run(TrainConfig(**{**TINY, "steps": 200}), tmp_path, logs=True)
    for name in ("metrics.jsonl", "events.jsonl", "critic.jsonl"):
        with open(tmp_path / name, "a") as handle:
            handle.write(json.dumps({"step": 300, "stale": True}) + "\n")
    run(TrainConfig(**{**TINY, "steps": 300}), tmp_path, resume=True, logs=True)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [100, 200, 300] and not any("stale" in row for row in rows)
    for name in ("events.jsonl", "critic.jsonl"):
        assert "stale" not in (tmp_path / name).read_text()


def test_should_stop_checkpoints_and_returns(tmp_path):
    sink = MemorySink(stop_after_step=100)
    result = run(TrainConfig(**TINY), tmp_path, sink)
    assert result.stopped and result.steps == 100
    assert load_checkpoint(tmp_path)["loop"]["step"] == 100


def test_resume_refuses_changed_settings_and_missing_runs(straight_run, tmp_path):
    out, _, _ = straight_run
    with pytest.raises(CheckpointError, match="these differ: hidden"):
        run(TrainConfig(**{**TINY, "hidden": 32, "steps": 500}), out, MemorySink(), resume=True)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        run(TrainConfig(**TINY), tmp_path / "nothing", MemorySink(), resume=True)
    with pytest.raises(CheckpointError, match="already holds a run"):
        run(TrainConfig(**TINY), out, MemorySink())


def test_gradient_steps_multiply_the_updates(tmp_path):
    config = TrainConfig(**{**TINY, "steps": 120, "checkpoint_every": 1_000})
    one = run(config, tmp_path / "one", MemorySink())
    three = run(dataclasses.replace(config, gradient_steps=3), tmp_path / "three", MemorySink())
    assert one.decisions == three.decisions  # at rho_threshold 0.5 the sandbox asks at every step
    assert three.updates == 3 * one.updates > 0


def _as_written_before_composed_configs(state: dict, dropped: str) -> dict:
    """The layout of checkpoints written before configs were composed: flat settings (without
    ``dropped``, as if that setting had been added since), the teacher's count among the loop's
    counters, and a replay buffer that did not count its rows."""
    config = TrainConfig.from_dict(state["config"]).to_dict()
    del config[dropped]
    loop = {**state["loop"], "teacher_decisions": state["teacher"]["decisions"]}
    buffer = {k: v for k, v in state["buffer"].items() if k != "added"}
    legacy = {k: v for k, v in state.items() if k != "teacher"}
    return {**legacy, "config": config, "loop": loop, "buffer": buffer}


def test_a_checkpoint_written_before_composed_configs_resumes_exactly(straight_run, tmp_path):
    out, _, _ = straight_run
    run(TrainConfig(**{**TINY, "steps": 250}), tmp_path, MemorySink())
    path = tmp_path / "checkpoint.pt"
    torch.save(_as_written_before_composed_configs(load_checkpoint(path), "teacher_budget"), path)
    # the settings it has still guard the run; the one it lacks is not compared
    with pytest.raises(CheckpointError, match="these differ: gamma$"):
        run(TrainConfig(**{**TINY, "gamma": 0.9, "teacher_budget": 3}), tmp_path, MemorySink(), resume=True)
    resumed = run(TrainConfig(**TINY), tmp_path, MemorySink(), resume=True)
    assert resumed.steps == 400
    a, b = _params(out), _params(tmp_path)
    assert all(torch.equal(a[k], b[k]) for k in a)
    # rewritten in the current layout: every setting, sections nested
    assert load_checkpoint(path)["config"] == TrainConfig(**TINY).full_dict()


def test_a_run_trained_before_the_overflow_block_is_not_resumed_but_named(tmp_path):
    run(TrainConfig(**{**TINY, "steps": 100}), tmp_path, MemorySink())
    path = tmp_path / "checkpoint.pt"
    state = load_checkpoint(path)
    assert state["features"]["overflow"] is True
    # written before the block existed: no overflow setting, and a network one block narrower
    torch.save({**state, "features": {"load_scale": state["features"]["load_scale"]}}, path)
    with pytest.raises(CheckpointError, match="older GridACE .* start a new run from it with --init-from"):
        run(TrainConfig(**TINY), tmp_path, MemorySink(), resume=True)


def test_a_run_can_start_from_another_runs_policy(straight_run, tmp_path):
    from ace_core.training.trainer import Trainer

    source, _, _ = straight_run
    trainer = Trainer(TrainConfig(**TINY, init_from=str(source)).validate(), tmp_path / "warm")
    started = trainer.sac.actor.state_dict()
    for name, tensor in _params(source / "checkpoint.pt").items():
        assert torch.equal(started[name], tensor), name
    assert trainer.sac.updates == 0  # the networks only: optimisers and counters start afresh
    fresh = Trainer(TrainConfig(**TINY).validate(), tmp_path / "cold").sac.actor.state_dict()
    assert any(not torch.equal(fresh[name], started[name]) for name in started)
    # the days it learns from include those its start policy learned from
    assert run_days(TrainConfig(**TINY, init_from=str(source)), [], None) == days_learned(source)


def test_init_from_refuses_a_foreign_policy_and_a_missing_path(straight_run, tmp_path):
    from ace_core.training.trainer import Trainer

    source, _, _ = straight_run
    with pytest.raises(ConfigError, match="does not exist"):
        TrainConfig(**TINY, init_from=str(tmp_path / "nowhere")).validate()
    with pytest.raises(CheckpointError, match="action space"):
        Trainer(TrainConfig(**{**TINY, "env": "rte_case14_realistic"}, init_from=str(source)), tmp_path / "x")
    with pytest.raises(CheckpointError, match="do not fit"):
        Trainer(TrainConfig(**{**TINY, "hidden": 32}, init_from=str(source)), tmp_path / "y")


def test_a_run_with_a_demand_scale_trains_on_heavier_days(tmp_path):
    parts = build_parts(TrainConfig(**sandbox_settings(demand_scale=1.2)), tmp_path)
    day = parts.scenarios[0]
    heavy, plain = reset_to(parts.env, day, 0), reset_to(make_env("l2rpn_case14_sandbox"), day, 0)
    np.testing.assert_allclose(heavy.load_p, 1.2 * plain.load_p, rtol=1e-5)


def test_a_run_with_a_demand_spread_trains_on_days_whose_loads_share_the_demand_otherwise(tmp_path):
    parts = build_parts(TrainConfig(**sandbox_settings(demand_scale=1.1, demand_spread=0.05)), tmp_path)
    day = parts.scenarios[0]
    plain = reset_to(make_env("l2rpn_case14_sandbox"), day, 0)
    first, again, other = (reset_to(parts.env, day, seed).load_p.copy() for seed in (0, 0, 1))
    np.testing.assert_allclose(first.sum(), 1.1 * plain.load_p.sum(), rtol=1e-4)  # the day's demand, heavier
    assert not np.allclose(first, 1.1 * plain.load_p, rtol=1e-3)  # each load's share drawn
    np.testing.assert_array_equal(first, again)  # from the episode's seed
    assert not np.allclose(first, other, rtol=1e-3)


@pytest.mark.parametrize("spread", [-0.1, 0.5])
def test_a_demand_spread_out_of_range_is_refused(spread):
    with pytest.raises(ConfigError, match=rf"demand_spread={spread} is out of range; accepted: 0.0 to 0.3"):
        TrainConfig(**sandbox_settings(demand_spread=spread)).validate()
