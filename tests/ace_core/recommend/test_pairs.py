"""Combined actions: tried when no single move clears the overloads, one step's worth of changes
under the grid's rules, simulated like grid2op plays them, and refused with the reason when an
operator's pair breaks a rule."""

from __future__ import annotations

import numpy as np
import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.forecasts import make_env_with_forecasts
from ace_core.live import LiveActionError, describe_action, parse_action, to_grid2op
from ace_core.live.legality import LegalityRules
from ace_core.recommend.pairs import clears_everything, pairs_needed
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline

LINE_OUT = 9  # line 5-12: taken out two steps before doing nothing's game over of day 0


@pytest.fixture(scope="module")
def stressed():
    """rte_case14_realistic day 0 at step 797 with line 5-12 out: no single move clears the
    overloads (doing nothing fails at step 798)."""
    env = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    space = build_action_space(env)
    env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(796)
    obs, _, done, _ = env.step(env.action_space({"set_line_status": [(LINE_OUT, -1)]}))
    assert not done
    yield env, space, obs
    env.close()


def test_pairs_are_tried_when_no_single_move_clears_the_overloads(stressed):
    env, space, obs = stressed
    result = RecommendationPipeline(env, space, PipelineConfig()).run(obs)
    # continuous moves are tried at the same time (tests/ace_core/recommend/test_flex_candidates.py)
    singles = [c for c in [*result.recommendations, *result.rejected] if not c.parts and c.move is None]
    assert pairs_needed(result.reference, [c for c in result.recommendations if not c.parts and not c.move])
    assert any("pair(s) of the best tried" in note for note in result.notes)
    assert result.timings_ms["pairs_ms"] > 0
    pairs = [c for c in [*result.recommendations, *result.rejected] if c.parts and c.move is None]
    assert pairs, "the pairs tried are ranked with the singles"
    for pair in pairs:
        first, second = pair.parts
        # one step's worth under the grid's rules: a line switch with one substation's topology
        assert sorted([first <= space.n_line, second <= space.n_line]) == [False, True]
        assert pair.action_index < 0 and " and " in pair.description
        assert pair.n1 is not None or pair.failed
    shown = [c for c in result.recommendations if c.parts and c.move is None]
    assert shown, "a pair safer than doing nothing is a card"
    card = shown[0]
    assert card.n1 is not None and card.look_ahead is not None and not card.look_ahead.skipped
    assert card.outcome.max_rho_after <= result.reference.outcome.max_rho_after or result.reference.failed
    # the pair's one-step outcome is grid2op's own for the two actions together
    action = space.to_grid2op(card.parts[0], env.action_space) + space.to_grid2op(
        card.parts[1], env.action_space
    )
    sim_obs, _, done, info = obs.simulate(action)
    assert not done and not info["is_illegal"]
    np.testing.assert_allclose(card.outcome.max_rho_after, float(sim_obs.rho.max()), atol=1e-5)
    assert not any(clears_everything(c) for c in singles if c.rank is not None)


def test_no_pair_is_tried_when_a_single_move_will_do(stressed):
    env, space, _ = stressed
    obs = env.reset(seed=0, options={"time serie id": 0})  # a calm morning
    result = RecommendationPipeline(env, space, PipelineConfig()).run(obs)
    assert not any(c.parts for c in [*result.recommendations, *result.rejected])
    assert "pairs_ms" not in result.timings_ms


def test_an_operators_pair_is_checked_against_the_grids_rules(stressed):
    env, space, obs = stressed
    rules = LegalityRules(env, space)
    reconnect_and_split = parse_action(
        {
            "kind": "pair",
            "actions": [
                {"kind": "line", "line": LINE_OUT, "status": "connect"},
                {"kind": "topology", "substation": 4, "set": [[2, 2]]},
            ],
        },
        space,
    )
    assert rules.refusal(obs, reconnect_and_split) == ""
    assert describe_action(reconnect_and_split, space).startswith("reconnect line 5-12 and substation 4: ")
    played = to_grid2op(reconnect_and_split, space, env.action_space)
    assert played.get_topological_impact()[1].sum() == 1  # one substation
    two_subs = parse_action(
        {
            "kind": "pair",
            "actions": [
                {"kind": "topology", "substation": 4, "set": [[2, 2]]},
                {"kind": "topology", "substation": 5, "set": [[1, 2]]},
            ],
        },
        space,
    )
    assert rules.refusal(obs, two_subs).startswith(
        "this grid allows 1 substation change(s) per step and the pair makes 2"
    )
    same_sub = parse_action(
        {
            "kind": "pair",
            "actions": [
                {"kind": "topology", "substation": 4, "set": [[2, 2]]},
                {"kind": "topology", "substation": 4, "set": [[1, 2]]},
            ],
        },
        space,
    )
    assert rules.refusal(obs, same_sub) == "a pair changes substation 4 twice; combine them into one action"
    with pytest.raises(LiveActionError, match="a pair needs 'actions': a list of two actions"):
        parse_action({"kind": "pair", "actions": [{"kind": "line", "line": 1, "status": "connect"}]}, space)
    with pytest.raises(LiveActionError, match="a pair's actions are not 'pair'"):
        parse_action({"kind": "pair", "actions": [{"kind": "pair"}, {"kind": "nothing"}]}, space)
    with pytest.raises(LiveActionError, match="unknown line 99"):
        parse_action(
            {
                "kind": "pair",
                "actions": [{"kind": "line", "line": 99, "status": "connect"}, {"kind": "index", "index": 3}],
            },
            space,
        )
