"""The cards checked on the grid as it is now: each card looked ahead is also played on the current
injections (grid2op's simulation with no time step ahead), shown beside its forecast figures, and
ranked by it where the forecast hides an overload."""

from __future__ import annotations

import json

import numpy as np

from ace_core.grid.outcome import Outcome
from ace_core.recommend.outcomes import Candidate
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline
from ace_core.recommend.ranking import CRITERIA, rank


def _forecast_error(env):
    """Day 0's first state, whose next-step forecast moves 30 MW from generator 2 to generator 4: a
    forecast error the slack would carry."""
    obs = env.reset(seed=0, options={"time serie id": 0})
    injection = obs._forecasted_inj[1][1]["injection"]
    shift = np.eye(len(obs.gen_p))
    injection["prod_p"] = injection["prod_p"] + shift[4] * 30 - shift[2] * 30
    return obs


def test_the_cards_looked_ahead_carry_grid2ops_own_figures_on_the_grid_as_it_is_now(
    forecast_sandbox, sandbox_space
):
    env, space = forecast_sandbox, sandbox_space
    obs = _forecast_error(env)
    config = PipelineConfig(policy_k=0, expert_k=4, expert_budget=16, look_ahead_top=2)
    pipeline = RecommendationPipeline(env, space, config)
    result = pipeline.run(obs)
    cards = [result.reference, *result.recommendations, *result.rejected]
    checked = [c for c in cards if c.now is not None]
    assert result.reference in checked and len(checked) == sum(c.look_ahead is not None for c in cards) >= 3
    for card in checked:
        sim_obs, _, done, _ = obs.simulate(space.to_grid2op(card.action_index, env.action_space), time_step=0)
        assert not done and card.now.max_rho_after == np.max(sim_obs.rho)
        assert json.loads(json.dumps(card.to_json()))["now"]["max_rho_after"] == card.now.max_rho_after
    # the forecast is not the grid as it is: doing nothing differs on the two
    reference = result.reference
    assert abs(reference.now.max_rho_after - reference.outcome.max_rho_after) > 0.01
    assert all(c.to_json()["now"] is None for c in cards if c not in checked)
    # an operator's what-if gets the same check
    card = result.recommendations[0]
    what_if = pipeline.what_if(obs, space.to_grid2op(card.action_index, env.action_space))
    assert what_if.now.max_rho_after == card.now.max_rho_after


def _card(index: int, forecast_rho: float, now_rho: float | None) -> Candidate:
    def outcome(rho: float) -> Outcome:
        return Outcome(1.05, max_rho_after=rho, overloads_after=(3,) if rho >= 1 else ())

    now = None if now_rho is None else outcome(now_rho)
    return Candidate(index, f"action {index}", ("expert",), 0.0, (), outcome=outcome(forecast_rho), now=now)


def test_an_overload_the_forecast_hides_ranks_a_card_lower_and_one_worse_than_nothing_is_rejected():
    """Doing nothing is at 96 % on the forecast and 130 % on the grid as it is now. A topology
    that looks best on the forecast (83 %) but keeps 110 % now comes after one at 90 % that holds
    95 % now; a card not checked comes after both; one at 140 % now is worse than doing nothing."""
    reference = _card(0, 0.96, 1.30)
    hides, holds, unchecked, worse = (
        _card(1, 0.83, 1.10),
        _card(2, 0.90, 0.95),
        _card(3, 0.80, None),
        _card(4, 0.85, 1.40),
    )
    cards, rejected = rank([hides, holds, unchecked, worse], reference)
    assert [c.action_index for c in cards] == [2, 1, 3]
    assert (
        cards[0].rank_reason == f"#1 above #2 on {CRITERIA[4]}: below 100% against 110% (equal before that)"
    )
    assert cards[2].rank_reason == (
        f"#3 below #2 on {CRITERIA[3]}: not checked against survives (equal before that)"
    )
    (refused,) = rejected
    assert refused.action_index == 4 and refused.rejected_because == (
        "worse than doing nothing on the grid as it is now: 1 line still overloaded; max rho "
        "105.0% -> 140.0% against 1 line still overloaded; max rho 105.0% -> 130.0%"
    )
    # without a check on either side, the forecast decides as before
    plain, _ = rank([_card(1, 0.83, None), _card(2, 0.90, None)], _card(0, 0.96, None))
    assert [c.action_index for c in plain] == [1, 2]
