import numpy as np

from ace_core.config import TrainConfig
from ace_core.evaluation.bench import bench_env
from ace_core.recommend.pipeline import recommend
from ace_core.rl.sac import SAC


def test_quick_bench_reports_every_figure():
    figures = bench_env("l2rpn_case14_sandbox", quick=True)
    for key in (
        "env_step_ms",
        "act_path_ms",
        "act_path_over_step",
        "train_steps_per_s",
        "train_over_raw",
        "recommend_ms_p50",
        "recommend_ms_p95",
    ):
        assert figures[key] > 0, key
    assert figures["train_updates"] == figures["train_decisions"]  # learning on at every decision
    assert figures["actions"] == 199 and figures["head"] == "flat"


def test_recommendations_are_simulated_and_ranked(sandbox, sandbox_space, sandbox_features):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    sac = SAC(sandbox_features.size, sandbox_space, TrainConfig(hidden=32).sac)
    cards, timings = recommend(obs, sac, sandbox_space, sandbox_features, sandbox.action_space, k=5)
    policy_cards = [c for c in cards if c.source == "policy"]
    assert len(policy_cards) == 5
    assert [c.confidence for c in policy_cards] == sorted((c.confidence for c in policy_cards), reverse=True)
    for card in policy_cards:
        sim_obs, _, done, _ = obs.simulate(sandbox_space.to_grid2op(card.action_index, sandbox.action_space))
        if card.max_rho_after is None:
            assert done and card.error
        else:
            assert np.isclose(card.max_rho_after, sim_obs.rho.max())
        assert card.description == sandbox_space.describe(card.action_index)
    assert timings["total_ms"] >= timings["policy_ms"] > 0


def test_greedy_fallback_when_the_grid_is_overloaded(sandbox, sandbox_space, sandbox_features):
    sandbox.reset(seed=0, options={"time serie id": 0})
    limits = sandbox.get_thermal_limit()
    try:
        sandbox.set_thermal_limit(limits * 0.6)
        obs = sandbox.reset(seed=0, options={"time serie id": 0})
        assert obs.rho.max() >= 1.0
        sac = SAC(sandbox_features.size, sandbox_space, TrainConfig(hidden=32).sac)
        cards, _ = recommend(obs, sac, sandbox_space, sandbox_features, sandbox.action_space, k=2)
        assert all(c.max_rho_before >= 1.0 for c in cards)
        assert {c.source for c in cards} <= {"policy", "greedy"}
    finally:
        sandbox.set_thermal_limit(limits)
        sandbox.reset(seed=0, options={"time serie id": 0})
