"""The decision budget, validation on the validation days, best.pt, and what loads it."""

import json

import pytest
import torch

from ace_core.agents.loading import load_agent
from ace_core.checkpoint import days_learned, load_checkpoint, validated_file
from ace_core.config import TrainConfig
from ace_core.events import EpisodeEvent, MemorySink, MetricsEvent
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import scenarios
from ace_core.rl.sac import SAC
from ace_core.training import run, validation_episodes
from ace_core.training.best_choice import BestChoice
from ace_core.training.setup import validator_for
from ace_core.training.trainer import Trainer
from ace_core.training.validation import Validator
from ace_core.training.validation_episodes import play
from ace_core.workers import Workers
from tests.sandbox_settings import sandbox_settings

# at rho_threshold 0.5 the sandbox asks the agent at every step: decisions == steps
VALIDATED = sandbox_settings(steps=400, checkpoint_every=200, validate_every=100)


def _actor(path):
    return load_checkpoint(path)["sac"]["actor"]


def _same(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _validations(sink):
    return [
        (m.step, m.values["eval/validation_survival"])
        for m in sink.of_type(MetricsEvent)
        if "eval/validation_survival" in m.values
    ]


def _chosen(sink, decisive: str, floor: float) -> MetricsEvent:
    """The validation a run's choice should keep, of its three (decisions 0, 100 and 200): the first
    of the best by (holds ``floor`` of the days as they are, ``decisive``)."""
    values = [m for m in sink.of_type(MetricsEvent) if "eval/validation_survival" in m.values]
    assert len(values) == 3
    keys = [(m.values["eval/validation_survival_demand_1.0"] >= floor, m.values[decisive]) for m in values]
    return values[keys.index(max(keys))]


@pytest.fixture(scope="module")
def validated_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("validated")
    sink = MemorySink()
    result = run(TrainConfig(**VALIDATED), out, sink)
    return out, sink, result


def test_the_decision_budget_stops_the_run_and_a_resume_may_raise_it(tmp_path):
    config = sandbox_settings(steps=400, checkpoint_every=1_000, decisions=50)
    result = run(TrainConfig(**config), tmp_path, MemorySink())
    assert result.decisions == 50 and result.steps == 50 and not result.stopped
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["decisions"] == 50 and summary["best_checkpoint"] is None
    assert summary["best_validation_survival"] is None
    resumed = run(TrainConfig(**{**config, "decisions": 80}), tmp_path, MemorySink(), resume=True)
    assert resumed.decisions == 80 and resumed.steps == 80


def test_validation_every_n_decisions_keeps_the_best_policy(validated_run):
    out, sink, result = validated_run
    validations = _validations(sink)
    # from the starting policy, every 100 decisions, the last one at the end
    assert [step for step, _ in validations] == [0, 100, 200, 300, 400]
    decisions = [
        m.values["eval/validation_decisions"]
        for m in sink.of_type(MetricsEvent)
        if "eval/validation_survival" in m.values
    ]
    assert decisions == [0, 100, 200, 300, 400]  # the run's decisions when it validated
    assert all(0 < survival <= 1 for _, survival in validations)
    best = max(survival for _, survival in validations)
    first_best = next(step for step, survival in validations if survival == best)  # ties: the earlier
    assert (result.best_validation_survival, result.best_step, result.best_decisions) == (
        best,
        first_best,
        first_best,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best_checkpoint"] == str(out / "best.pt") and summary["best_step"] == first_best
    state = load_checkpoint(out / "best.pt")
    assert "buffer" not in state and state["validation"]["survival"] == best
    assert load_checkpoint(out / "checkpoint.pt")["loop"]["best"]["step"] == first_best


def test_a_run_directory_loads_its_best_policy_and_a_file_loads_that_file(validated_run):
    out, _, result = validated_run
    assert result.best_step != result.steps  # the best is not the last policy here
    best, last = _actor(out / "best.pt"), _actor(out / "checkpoint.pt")
    assert not _same(best, last)
    env = make_env("l2rpn_case14_sandbox")
    assert _same(load_agent(f"sac:{out}", env).sac.actor.state_dict(), best)
    assert _same(load_agent(f"sac-checked:{out}:3", env).sac.actor.state_dict(), best)
    assert _same(load_agent(f"sac:{out / 'checkpoint.pt'}", env).sac.actor.state_dict(), last)


def test_a_run_keeping_its_validated_policies_holds_each_one_and_trains_as_without(validated_run, tmp_path):
    out, sink, result = validated_run
    kept = tmp_path / "kept"
    run(TrainConfig(**{**VALIDATED, "validation_keep": True}), kept, MemorySink())
    validations = [m.values for m in sink.of_type(MetricsEvent) if "eval/validation_survival" in m.values]
    decisions = [int(v["eval/validation_decisions"]) for v in validations]
    assert len(decisions) > 2 and sorted(p.name for p in (kept / "validated").iterdir()) == sorted(
        f"decisions-{d}.pt" for d in decisions
    )
    for d, values in zip(decisions, validations):
        state = load_checkpoint(validated_file(kept, d))
        assert state["validation"]["survival"] == values["eval/validation_survival"]
        assert "buffer" not in state  # a policy file, as best.pt
    assert _same(_actor(validated_file(kept, result.best_decisions)), _actor(out / "best.pt"))
    assert _same(_actor(kept / "best.pt"), _actor(out / "best.pt"))  # the run is the one without
    first = validated_file(kept, decisions[0])
    assert days_learned(first) == days_learned(kept) is not None  # evaluations refuse its days too
    env = make_env("l2rpn_case14_sandbox")
    assert _same(load_agent(f"sac:{first}", env).sac.actor.state_dict(), _actor(first))


def test_validation_leaves_training_exactly_as_without_it(validated_run, tmp_path):
    out, _, _ = validated_run
    run(TrainConfig(**{**VALIDATED, "validate_every": 0}), tmp_path, MemorySink())
    assert _same(_actor(out / "checkpoint.pt"), _actor(tmp_path / "checkpoint.pt"))
    assert not (tmp_path / "best.pt").exists()


def test_a_resumed_run_keeps_its_best_and_validates_as_an_uninterrupted_one(validated_run, tmp_path):
    out, straight_sink, straight = validated_run
    first = run(TrainConfig(**{**VALIDATED, "steps": 250}), tmp_path, MemorySink())
    assert first.best_validation_survival is not None
    sink = MemorySink()
    resumed = run(TrainConfig(**VALIDATED), tmp_path, sink, resume=True)
    assert _validations(sink) == [(s, v) for s, v in _validations(straight_sink) if s > 250]
    assert (resumed.best_validation_survival, resumed.best_step) == (
        straight.best_validation_survival,
        straight.best_step,
    )
    assert _same(_actor(tmp_path / "best.pt"), _actor(out / "best.pt"))


@pytest.mark.parametrize(
    "setting, copy, by_demand",
    [
        # heavier copies of the days: reported beside the days as they are
        ({"validation_demand_scale": 1.2}, "demand_1.2", ["1.0", "1.2"]),
        # the days under a storm of line attacks
        ({"validation_opponent": "storm"}, "attacks", ["1.0"]),
        # heavier and uneven: each load's share drawn from the grid seed and the day
        ({"validation_uneven": "1.2", "validation_uneven_seeds": 1}, "uneven", ["1.0"]),
    ],
)
def test_a_harder_copy_of_the_validation_days_decides_with_them_and_leaves_training_alone(
    validated_run, tmp_path, setting, copy, by_demand
):
    out, straight_sink, _ = validated_run
    sink = MemorySink()
    result = run(TrainConfig(**{**VALIDATED, **setting}), tmp_path, sink)
    assert _same(_actor(tmp_path / "checkpoint.pt"), _actor(out / "checkpoint.pt"))
    values = [m.values for m in sink.of_type(MetricsEvent) if "eval/validation_survival" in m.values]
    # the days as they are score as in a run without the copy; the mean of both decides
    as_they_are = [v["eval/validation_survival_demand_1.0"] for v in values]
    assert list(zip([s for s, _ in _validations(sink)], as_they_are)) == _validations(straight_sink)
    # the copy is harder: it is lost sooner somewhere
    harder = [v[f"eval/validation_survival_{copy}"] for v in values]
    assert any(h < a for h, a in zip(harder, as_they_are))
    for v, h, a in zip(values, harder, as_they_are):
        assert v["eval/validation_survival"] == pytest.approx((h + a) / 2)
    best = load_checkpoint(tmp_path / "best.pt")["validation"]
    assert best["survival"] == result.best_validation_survival == max(v for _, v in _validations(sink))
    assert sorted(best["survival_by_demand"]) == by_demand
    assert (best["survival_under_attacks"] is not None) == (copy == "attacks")
    assert (best["survival_uneven"] is not None) == (copy == "uneven")


def test_a_run_choosing_on_the_attacked_copy_above_a_floor_keeps_that_policy(tmp_path, monkeypatch):
    seeds_played = []

    def play_and_note(env, agent, scenario, seed):
        seeds_played.append(seed)
        return play(env, agent, scenario, seed)

    monkeypatch.setattr(validation_episodes, "play", play_and_note)
    floor = 0.9
    settings = {
        "validation_opponent": "storm",
        "validation_attack_seeds": 2,  # the attacked copy on more grid seeds than the days as they are
        "validation_decides": "attacks",
        "validation_floor": floor,
    }
    sink = MemorySink()
    config = TrainConfig(**{**VALIDATED, "steps": 200, **settings})
    # the run's validations may rank alike by every rule: the trainer must hold the run's own
    assert Trainer(config, tmp_path / "built", MemorySink()).choice == BestChoice("attacks", floor)
    run(config, tmp_path / "run", sink)
    chosen = _chosen(sink, "eval/validation_survival_attacks", floor)
    best = load_checkpoint(tmp_path / "run" / "best.pt")["validation"]
    assert best["step"] == chosen.step
    assert best["survival_under_attacks"] == chosen.values["eval/validation_survival_attacks"]
    # each validation: the days as they are with seed 0, the attacked copy with seeds 0 and 1
    assert set(seeds_played) == {0, 1} and seeds_played.count(0) == 2 * seeds_played.count(1)


def test_a_run_choosing_on_the_uneven_copies_plays_each_on_its_seeds_and_keeps_that_policy(
    tmp_path, monkeypatch
):
    played = []

    def play_and_note(env, agent, scenario, seed):
        played.append((env.gridace_demand_scale, env.gridace_demand_spread, seed))
        return play(env, agent, scenario, seed)

    monkeypatch.setattr(validation_episodes, "play", play_and_note)
    floor = 0.9
    settings = {"validation_uneven": "1.1,1.2", "validation_uneven_seeds": 2, "validation_decides": "uneven"}
    sink = MemorySink()
    config = TrainConfig(**{**VALIDATED, "steps": 200, "validation_floor": floor, **settings})
    assert Trainer(config, tmp_path / "built", MemorySink()).choice == BestChoice("uneven", floor)
    run(config, tmp_path / "run", sink)
    chosen = _chosen(sink, "eval/validation_survival_uneven", floor)
    best = load_checkpoint(tmp_path / "run" / "best.pt")["validation"]
    assert best["step"] == chosen.step
    assert best["survival_uneven"] == chosen.values["eval/validation_survival_uneven"]
    # each validation: the days as they are with seed 0, each uneven copy with seeds 0 and 1
    days = len(scenarios(make_env("l2rpn_case14_sandbox"), "validation"))
    assert sorted(set(played)) == [
        (1.0, 0.0, 0),
        (1.1, 0.05, 0),
        (1.1, 0.05, 1),
        (1.2, 0.05, 0),
        (1.2, 0.05, 1),
    ]
    assert all(played.count(copy) == 3 * days for copy in set(played))


def test_validations_on_two_ray_workers_give_the_figures_of_one_process(local_ray, tmp_path, monkeypatch):
    """Every copy (as they are, heavier, under a storm, uneven, each on its own seeds) split between two actors,
    each playing its episodes one after another in one env per copy."""
    settings = {
        **VALIDATED,
        "steps": 100,
        "validation_demand_scale": 1.2,
        "validation_opponent": "storm",
        "validation_attack_seeds": 2,
        "validation_uneven": "1.1",
        "validation_uneven_seeds": 2,
    }
    here, on_ray = MemorySink(), MemorySink()
    run(TrainConfig(**settings), tmp_path / "here", here)

    def not_here(*args):
        raise AssertionError("a validation of the run on Ray workers was played in its own process")

    monkeypatch.setattr(Validator, "_play_here", not_here)
    run(TrainConfig(**settings), tmp_path / "ray", on_ray, workers=Workers(2))

    def figures(sink):
        return [
            {k: v for k, v in m.values.items() if k.startswith("eval/")}
            for m in sink.of_type(MetricsEvent)
            if "eval/validation_survival" in m.values
        ]

    assert len(figures(here)) == 2 and figures(on_ray) == figures(here)
    assert _same(_actor(tmp_path / "ray" / "best.pt"), _actor(tmp_path / "here" / "best.pt"))


def test_a_run_given_a_ray_address_plays_its_validations_on_that_cluster(local_ray, tmp_path, monkeypatch):
    """``--ray-address`` with one worker: the validations go to an actor of the cluster Ray is
    joined to (here the local one, ``auto``), with the figures of the run's own process."""
    settings = {**VALIDATED, "steps": 100}
    here, on_cluster = MemorySink(), MemorySink()
    run(TrainConfig(**settings), tmp_path / "here", here)

    def not_here(*args):
        raise AssertionError("a validation of the run on a Ray cluster was played in its own process")

    monkeypatch.setattr(Validator, "_play_here", not_here)
    run(TrainConfig(**settings), tmp_path / "cluster", on_cluster, workers=Workers(1, "auto"))
    assert local_ray.is_initialized()  # joined, not started and stopped by the run

    def figures(sink):
        return [m.values for m in sink.of_type(MetricsEvent) if "eval/validation_survival" in m.values]

    assert figures(on_cluster) and [f["eval/validation_survival"] for f in figures(on_cluster)] == [
        f["eval/validation_survival"] for f in figures(here)
    ]


def test_a_validation_whose_actor_died_is_played_in_the_trainers_process(local_ray, sandbox, sandbox_space):
    config = TrainConfig(**{**VALIDATED, "validation_opponent": "storm"})
    sac = SAC(FeatureBuilder(sandbox).size, sandbox_space, config.sac)
    features = FeatureBuilder(sandbox)
    here, on_ray = (validator_for(config, sandbox, sandbox_space, Workers(count)) for count in (1, 2))
    expected = here(sac, features, 0, 0)
    assert on_ray(sac, features, 0, 0) == expected
    local_ray.kill(on_ray.ray.actors[0])
    assert on_ray(sac, features, 0, 0) == expected  # played here
    assert on_ray(sac, features, 0, 0) == expected and len(on_ray.ray.actors) == 2  # new actors
    on_ray.close()


def test_episode_length_cuts_the_train_and_validation_episodes(tmp_path):
    config = TrainConfig(
        **sandbox_settings(steps=120, checkpoint_every=1_000, validate_every=100, episode_length=40)
    )
    sink = MemorySink()
    trainer = Trainer(config, tmp_path, sink)
    env = make_env("l2rpn_case14_sandbox")
    assert trainer.scenarios == scenarios(env, "train", 40) != scenarios(env, "train")
    assert trainer.validator.scenarios == scenarios(env, "validation", 40)
    trainer.run()
    ended = sink.of_type(EpisodeEvent)
    assert ended and {e.max_steps for e in ended} <= {s.length for s in trainer.scenarios}
    assert max(e.max_steps for e in ended) == 40
    assert {e.scenario for e in ended} <= {s.name for s in scenarios(env, "train", 40)}


def _attacked_within(env, steps: int) -> bool:
    """Whether doing nothing on ``env``'s first chronic meets a line attack within ``steps``."""
    env.reset(seed=0, options={"time serie id": 0})
    for _ in range(steps):
        _, _, done, info = env.step(env.action_space({}))
        if info.get("opponent_attack_line") is not None:
            return True
        if done:
            return False
    return False


def test_a_run_trains_under_the_opponent_it_names_and_validates_as_the_env_is(tmp_path):
    settings = sandbox_settings(steps=50, checkpoint_every=1_000, validate_every=100)
    attacked = Trainer(TrainConfig(**settings, opponent="random-line"), tmp_path / "attacked")
    plain = Trainer(TrainConfig(**settings), tmp_path / "plain")
    assert _attacked_within(attacked.env, 200) and not _attacked_within(plain.env, 200)
    assert attacked.validator.env_name == plain.validator.env_name == "l2rpn_case14_sandbox"
    assert attacked.validator.scenarios == plain.validator.scenarios
