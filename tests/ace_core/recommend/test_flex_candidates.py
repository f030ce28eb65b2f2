"""Continuous moves as cards: tried when topology is not enough, simulated like grid2op plays them,
ranked by safety and then by cost, and not tried when a topology action will do."""

from __future__ import annotations

import warnings

import grid2op
import numpy as np
import pytest
from lightsim2grid import LightSimBackend

from ace_core.grid.action_space import build_action_space
from ace_core.grid.forecasts import make_env_with_forecasts
from ace_core.live import assessment_dict, card_action, card_dict, to_grid2op
from ace_core.recommend.explain import facts
from ace_core.recommend.flex import FIRST_FLEX, flex_action
from ace_core.recommend.pairs import clears_everything
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline
from ace_core.recommend.ranking import safety_key

OVERLOADED = 0  # line 0's limit lowered so that it runs at 102 % on the first state of day 0


@pytest.fixture(scope="module")
def sandbox():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = grid2op.make("l2rpn_case14_sandbox", test=True, backend=LightSimBackend())
    space = build_action_space(env)
    yield env, space
    env.close()


def _first_state(env):
    env.set_id(0)
    env.seed(0)
    return env.reset()


@pytest.fixture
def overloaded(sandbox):
    """Line 0 at 102 % (doing nothing takes it to ~105 % at the next step)."""
    env, space = sandbox
    limits = np.asarray(env.get_thermal_limit(), dtype=float)
    calm = _first_state(env)
    tight = limits.copy()
    tight[OVERLOADED] = float(calm.a_or[OVERLOADED]) / 1.02
    env.set_thermal_limit(tight)
    obs = _first_state(env)
    assert obs.rho[OVERLOADED] == pytest.approx(1.02, abs=1e-3)
    yield env, space, obs
    env.set_thermal_limit(limits)


def _pipeline(env, space, **config) -> RecommendationPipeline:
    # an expert of one simulation: no topology action clears the overload
    return RecommendationPipeline(env, space, PipelineConfig(**{"expert_budget": 1, "horizon": 1, **config}))


def test_continuous_moves_are_proposed_when_topology_is_not_enough(overloaded):
    env, space, obs = overloaded
    result = _pipeline(env, space).run(obs)
    reference = result.reference
    assert reference.outcome.overloads_after == (OVERLOADED,)
    assert any("continuous move(s) tried" in note for note in result.notes)
    assert result.timings_ms["flex_ms"] > 0
    moves = [c for c in [*result.recommendations, *result.rejected] if c.move is not None]
    assert moves and all(c.action_index <= FIRST_FLEX and c.cost is not None for c in moves)
    cards = [c for c in result.recommendations if c.move is not None]
    assert cards, "a continuous move safer than doing nothing is a card"
    card = cards[0]
    assert card.rank is not None and clears_everything(card)
    assert card.outcome.max_rho_after < reference.outcome.max_rho_after
    assert card.n1 is not None and card.look_ahead is not None
    # the card's figures are grid2op's own for the same action
    sim_obs, _, done, info = obs.simulate(flex_action(card, space, env.action_space))
    assert not done and not info["is_illegal"] and not info["is_ambiguous"]
    assert card.outcome.max_rho_after == pytest.approx(float(sim_obs.rho.max()), abs=1e-4)
    # the card says the move in words and carries it with its cost
    data = card.to_json()
    assert data["move"] == card.move.to_dict() and "redispatch" in data["move"]
    assert data["cost"]["mw"] > 0 and data["cost"]["euros_per_hour"] > 0
    words = card.move.describe(space.names)
    assert card.description.endswith(words) and "redispatch generator" in words
    assert "MW" in card.description
    # and the facts a language model explains say what it costs
    cost = data["cost"]
    assert f"changes {cost['mw']:.1f} MW and costs {cost['euros_per_hour']:.0f} euros per hour" in facts(data)


def test_accepting_a_continuous_card_plays_its_move(overloaded):
    env, space, obs = overloaded
    result = _pipeline(env, space).run(obs)
    card = next(c for c in result.recommendations if c.move is not None)
    shown = card_dict(card)
    assert shown["source"] == "flex"
    assert shown["figures"]["move"] == card.move.to_dict() and shown["figures"]["cost"] == card.cost.to_dict()
    action = card_action(card.action_index, card.parts, space, card.move)
    assert action.move == card.move
    assert to_grid2op(action, space, env.action_space) == flex_action(card, space, env.action_space)
    # the cards not shown are named by their action too (a card that expires says why)
    assessment = assessment_dict(result, shown=[])
    for entry in [*assessment["also_safe"], *assessment["rejected"]]:
        named = card_action(entry["action_index"], entry["parts"], space, entry.get("move"))
        assert (named.move is not None) == (entry["action_index"] <= FIRST_FLEX)


def test_equally_safe_cards_are_ranked_by_cost(overloaded):
    env, space, obs = overloaded
    result = _pipeline(env, space).run(obs)
    keys = [safety_key(c) for c in result.recommendations]
    assert keys == sorted(keys)
    safe = [c for c in result.recommendations if clears_everything(c)]
    for upper, lower in zip(safe, safe[1:]):
        if safety_key(upper)[:9] == safety_key(lower)[:9]:
            assert upper.euros_per_hour <= lower.euros_per_hour
    with_cost = [c for c in result.recommendations if c.euros_per_hour > 0]
    assert with_cost and all(c.cost.mw > 0 for c in with_cost)


def test_no_continuous_move_when_the_grid_is_calm_or_when_off(overloaded):
    env, space, obs = overloaded
    off = _pipeline(env, space, flex=0).run(obs)
    assert not any(c.move for c in [*off.recommendations, *off.rejected])
    assert "flex_ms" not in off.timings_ms
    env.set_thermal_limit(np.full(env.n_line, 1e4))  # nothing is overloaded
    calm = _first_state(env)
    result = _pipeline(env, space).run(calm)
    assert not any(c.move for c in [*result.recommendations, *result.rejected])
    assert "flex_ms" not in result.timings_ms


def _chained(obs, action, horizon: int) -> list[float]:
    """Max rho of grid2op's chained ``obs.simulate``: the action, then doing nothing."""
    sim_obs, _, done, _ = obs.simulate(action)
    trajectory = [float(sim_obs.rho.max())]
    while not done and len(trajectory) < horizon:
        sim_obs, _, done, _ = sim_obs.simulate(sim_obs.action_helper({}))
        if not done:
            trajectory.append(float(sim_obs.rho.max()))
    return trajectory


def test_the_look_ahead_keeps_the_redispatch_as_grid2op_does():
    env = make_env_with_forecasts("l2rpn_case14_sandbox", "perfect", 12)
    try:
        space = build_action_space(env)
        calm = env.reset(seed=0, options={"time serie id": 0})
        tight = np.asarray(env.get_thermal_limit(), dtype=float)
        tight[OVERLOADED] = float(calm.a_or[OVERLOADED]) / 1.02
        env.set_thermal_limit(tight)
        obs = env.reset(seed=0, options={"time serie id": 0})
        result = _pipeline(env, space, horizon=12).run(obs)
        # doing nothing: line 0 trips on its overload within the hour
        assert result.reference.look_ahead.first_overload_step == 1
        moves = [c for c in [*result.recommendations, *result.rejected] if c.move and c.look_ahead]
        assert moves
        for card in moves:
            expected = _chained(obs, flex_action(card, space, env.action_space), 12)
            # grid2op keeps the redispatch at every step: so does the look-ahead
            np.testing.assert_allclose(card.look_ahead.max_rho, expected, atol=1e-3)
        best = result.recommendations[0]
        assert best.move is not None and best.look_ahead.worst_rho < 1.0
    finally:
        env.close()


def test_a_policys_continuous_move_is_a_card_with_its_cost_and_grid2ops_figures(overloaded):
    import torch

    from ace_core.config import TrainConfig
    from ace_core.grid.features import FeatureBuilder
    from ace_core.grid.flex.moves import FlexMove
    from ace_core.rl.sac import SAC

    env, space, obs = overloaded
    move = FlexMove(redispatch=((0, -2.0), (1, 2.0)))
    flexible = space.with_moves([move])
    features = FeatureBuilder(env)
    torch.manual_seed(0)
    sac = SAC(features.size, flexible, TrainConfig(env="l2rpn_case14_sandbox").sac)
    with torch.no_grad():
        sac.actor.net[-1].bias[flexible.first_move] = 50.0  # the policy's first choice is the move
    sac._actor_weights = None
    config = PipelineConfig(expert_budget=1, horizon=1, policy_k=3)
    result = RecommendationPipeline(env, flexible, config, sac=sac, features=features).run(obs)
    card = next(
        c for c in [*result.recommendations, *result.rejected] if c.action_index == flexible.first_move
    )
    assert "policy" in card.sources and card.move == move and card.cost.mw > 0
    sim_obs, _, done, info = obs.simulate(move.to_grid2op(env.action_space))
    assert not done and not info["is_illegal"]
    assert card.outcome.max_rho_after == pytest.approx(float(sim_obs.rho.max()), abs=1e-4)
    action = card_action(card.action_index, card.parts, flexible, card.move)
    assert action.kind == "nothing" and action.move == move
