import json

import numpy as np
import pytest

from ace_core.config import TrainConfig
from ace_core.grid.action_space import build_action_space
from ace_core.grid.contingency import ContingencyListError
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.forecasts import ForecastError, make_env_with_forecasts
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline
from ace_core.recommend.ranking import CRITERIA, safety_key, shortlist
from ace_core.rl.sac import SAC


@pytest.fixture(scope="module")
def realistic():
    env = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    sac = SAC(features.size, space, TrainConfig(env="rte_case14_realistic", hidden=32).sac)
    yield env, space, features, sac
    env.close()


def _stressed_states(env, space, chronic: int, start: int, count: int, threshold: float = 0.9):
    """States of a stressed 14-bus day (max rho >= ``threshold``), doing nothing in between."""
    env.reset(seed=chronic, options={"time serie id": chronic})
    env.fast_forward_chronics(start)
    obs, noop = env.get_obs(), env.action_space({})
    states = []
    while len(states) < count:
        if obs.rho.max() >= threshold:
            states.append(obs)
        obs, _, done, _ = env.step(noop)
        if done:
            break
    return states


def _grid2op_outcome(obs, action):
    sim_obs, _, done, info = obs.simulate(action)
    failed = done or bool(info.get("exception")) or bool(info.get("is_illegal"))
    return failed, (None if failed else np.asarray(sim_obs.rho))


def test_no_recommendation_is_worse_than_doing_nothing_on_stressed_days(realistic):
    env, space, features, sac = realistic
    config = PipelineConfig(policy_k=5, expert_k=4, expert_budget=64)
    pipeline = RecommendationPipeline(env, space, config, sac, features)
    noop = env.action_space({})
    shown = rejected = 0
    # two afternoons of overloads (doing nothing ends the day at step 798)
    for chronic, start in ((0, 505), (0, 785)):
        for obs in _stressed_states(env, space, chronic, start, 4, threshold=0.98):
            result = pipeline.run(obs)
            ref_failed, ref_rho = _grid2op_outcome(obs, noop)
            assert result.reference.action_index == 0 and result.reference.outcome.game_over == ref_failed
            for card in result.recommendations:
                failed, rho = _grid2op_outcome(obs, space.to_grid2op(card.action_index, env.action_space))
                assert not failed, card.description
                if not ref_failed:
                    assert rho.max() <= ref_rho.max() + 1e-6, card.description
                    assert (rho >= 1).sum() <= (ref_rho >= 1).sum(), card.description
                    assert safety_key(card)[:7] <= safety_key(result.reference)[:7]
            for card in result.rejected:
                assert card.rejected_because and card.rank is None
            keys = [safety_key(c) for c in result.recommendations]
            assert keys == sorted(keys)
            assert [c.rank for c in result.recommendations] == list(range(1, len(keys) + 1))
            _assert_ranks_in_words(result.recommendations)
            _assert_the_shortlist_keeps_a_safe_policy_proposal(result.recommendations)
            shown += len(result.recommendations)
            rejected += len(result.rejected)
            json.dumps(result.to_json())  # what the console and the API send
    assert shown > 0 and rejected > 0


def _assert_ranks_in_words(cards) -> None:
    """Each card says why it sits where it does: the first criterion of the safety order on which
    it differs from its neighbour, named as the order names it."""
    for i, card in enumerate(cards):
        if len(cards) == 1:
            assert card.rank_reason == "#1: the only action safer than doing nothing"
            continue
        upper, lower = (card, cards[i + 1]) if i + 1 < len(cards) else (cards[i - 1], card)
        a, b = safety_key(upper), safety_key(lower)
        which = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if which is None:
            assert "tie on every criterion" in card.rank_reason
            continue
        assert a[which] < b[which]
        relation = (
            f"#{upper.rank} above #{lower.rank}" if upper is card else f"#{lower.rank} below #{upper.rank}"
        )
        assert card.rank_reason.startswith(f"{relation} on {CRITERIA[which]}: "), card.rank_reason
        assert card.to_json()["rank_reason"] == card.rank_reason


def _assert_the_shortlist_keeps_a_safe_policy_proposal(cards) -> None:
    shown = shortlist(cards, 2)
    assert len(shown) == min(2, len(cards)) and [c.rank for c in shown] == list(range(1, len(shown) + 1))
    _assert_ranks_in_words(shown)
    safe_policy = [c for c in cards if "policy" in c.sources and not c.outcome.overloads_after]
    if safe_policy:
        assert any("policy" in c.sources for c in shown)
    if not safe_policy or any("policy" in c.sources for c in cards[:2]):
        assert [c.action_index for c in shown] == [c.action_index for c in cards[:2]]


def _expert_pool(result) -> list:
    """The expert pool's candidates a run kept (not those the reference or default also are)."""
    return [c for c in (*result.recommendations, *result.rejected) if c.sources[0] == "expert"]


def _kept_by_n1_and_by_max_rho(env, space, features, sac, obs):
    """(the candidate an N-1-screened expert pool keeps, the one its lowest max rho is, the whole
    pool with its figures), with no candidate's look-ahead: the rejections and keys the pool is
    chosen by."""

    def pipeline(**config):
        config = PipelineConfig(policy_k=0, expert_budget=16, look_ahead_top=0, **config)
        return RecommendationPipeline(env, space, config, sac, features)

    (kept,) = _expert_pool(pipeline(expert_k=1, expert_n1=16).run(obs))
    (lowest_rho,) = _expert_pool(pipeline(expert_k=1).run(obs))
    pool = _expert_pool(pipeline(expert_k=16).run(obs))
    assert lowest_rho.outcome.max_rho_after == min(c.outcome.max_rho_after for c in pool)
    acceptable = [c for c in pool if not c.rejected_because]
    assert acceptable and not kept.rejected_because
    assert safety_key(kept)[:7] == min(safety_key(c)[:7] for c in acceptable)
    return kept, lowest_rho


def test_an_n1_screened_expert_pool_keeps_its_safest_candidate_not_worse_than_nothing(realistic):
    env, space, features, sac = realistic
    # a stressed validation morning that doing nothing ends at step 3: at its second step the
    # pool's safest candidate by the safety order clears the overload but raises max rho to 149 %,
    # worse than doing nothing
    obs = reset_to(env, scenarios(env, "validation")[2], 2)
    for step in range(3):
        kept, lowest_rho = _kept_by_n1_and_by_max_rho(env, space, features, sac, obs)
        if not lowest_rho.rejected_because:
            assert safety_key(kept)[:7] <= safety_key(lowest_rho)[:7]
        if step < 2:
            obs, *_ = env.step(env.action_space({}))


def test_an_n1_screened_expert_pool_prefers_fewer_outages_that_split_the_grid_to_a_lower_max_rho():
    env = make_env_with_forecasts("l2rpn_neurips_2020_track1", "perfect", 12)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    sac = SAC(features.size, space, TrainConfig(env="l2rpn_neurips_2020_track1", hidden=32).sac)
    # the validation day's evening, doing nothing: the pool's lowest max rho leaves 3 single
    # outages that split the grid, a split at the same substation leaves 2
    obs = reset_to(env, scenarios(env, "validation")[0], 0)
    for _ in range(198):
        obs, _, done, _ = env.step(env.action_space({}))
        assert not done
    kept, lowest_rho = _kept_by_n1_and_by_max_rho(env, space, features, sac, obs)
    assert len(kept.n1.diverged) < len(lowest_rho.n1.diverged)
    assert kept.outcome.max_rho_after > lowest_rho.outcome.max_rho_after
    env.close()


def test_the_reference_carries_n1_and_look_ahead_and_the_state_its_alarms(realistic):
    env, space, features, sac = realistic
    pipeline = RecommendationPipeline(env, space, PipelineConfig(horizon=6), sac, features)
    obs = _stressed_states(env, space, 0, 770, 1)[0]
    result = pipeline.run(obs, state_backend=env.backend)
    reference = result.reference
    assert reference.n1 is not None and reference.n1.screened > 0
    assert reference.look_ahead is not None and len(reference.look_ahead.max_rho) <= 6
    assert result.forecast["kind"] == "perfect" and result.forecast["horizon_steps"] == 6
    assert result.security.n1 is not None and result.security.n1.screened > 0
    if not result.security.n1.secure:
        assert any(alarm.startswith("not N-1 secure") for alarm in result.security.alarms)
    payload = result.to_json()
    assert payload["reference"]["outcome"] and "max rho" in payload["reference"]["outcome"]
    assert set(payload["timings_ms"]) >= {"simulate_ms", "n1_ms", "n1_solver_ms", "look_ahead_ms", "total_ms"}
    # without the live backend the grid is re-solved in the simulator, generators at their
    # realised output: the same base case, the same worst outage
    again = pipeline.run(obs)
    assert again.security.n1.screened == result.security.n1.screened
    assert again.security.n1.worst.line == result.security.n1.worst.line


def test_a_game_over_is_said_in_words(realistic):
    env, space, features, sac = realistic
    env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(785)  # doing nothing ends this day a few steps later
    obs, noop = env.get_obs(), env.action_space({})
    while not obs.simulate(noop)[2]:
        obs, _, done, _ = env.step(noop)
        assert not done
    result = RecommendationPipeline(env, space, PipelineConfig(), sac, features).run(obs)
    reference = result.reference
    assert reference.outcome.game_over and reference.words == "game over in simulation"
    assert reference.outcome.max_rho_after is None
    assert reference.to_json()["outcome"] == "game over in simulation"
    assert reference.look_ahead.game_over_step == 1
    assert "doing nothing: game over in simulation in 5 min" in result.security.alarms
    for card in result.rejected:
        if card.outcome.game_over:
            assert card.words == "game over in simulation"
    assert all("-1" not in c.words for c in [reference, *result.recommendations, *result.rejected])


def test_an_env_without_forecasts_skips_the_look_ahead_and_says_so():
    from grid2op.Chronics import GridStateFromFile

    env = make_env(
        "l2rpn_case14_sandbox",
        cache_chronics=False,
        data_feeding_kwargs={"gridvalueClass": GridStateFromFile},
    )
    space = build_action_space(env)
    obs = env.reset(seed=0, options={"time serie id": 0})
    result = RecommendationPipeline(env, space).run(obs)
    assert result.forecast["kind"] == "none"
    assert result.reference.look_ahead.skipped and "no forecasts" in result.notes[0]
    assert result.reference.n1 is not None


def test_bad_settings_are_clear_errors(sandbox, sandbox_space):
    sandbox.reset(seed=0, options={"time serie id": 0})
    with pytest.raises(ForecastError, match="beyond the 1 step"):
        RecommendationPipeline(sandbox, sandbox_space, PipelineConfig(horizon=12))
    with pytest.raises(ForecastError, match="positive"):
        PipelineConfig(horizon=0)
    with pytest.raises(ContingencyListError, match="'nope'"):
        RecommendationPipeline(sandbox, sandbox_space, PipelineConfig(horizon=1, contingencies=("nope",)))


def test_what_if_gives_any_action_the_same_figures(realistic):
    env, space, features, sac = realistic
    pipeline = RecommendationPipeline(env, space, PipelineConfig(), sac, features)
    obs = _stressed_states(env, space, 0, 770, 1)[0]
    result = pipeline.run(obs)
    for card in [*result.recommendations[:1], *result.rejected[:2]]:
        action = space.to_grid2op(card.action_index, env.action_space)
        checked = pipeline.what_if(obs, action)
        assert checked.action_index == card.action_index and checked.words == card.words
        assert checked.outcome.max_rho_after == card.outcome.max_rho_after
        if card.n1 is not None:
            assert checked.n1.worst_rho == pytest.approx(card.n1.worst_rho)
        assert (checked.rejected_because == "") == (card in result.recommendations)
        if not checked.failed:
            assert checked.look_ahead is not None and checked.look_ahead.max_rho
    # an action outside the policy's action space: a redispatch
    redispatch = env.action_space({"redispatch": [(0, 1.0)]})
    checked = pipeline.what_if(obs, redispatch)
    assert checked.action_index == -1 and checked.words
    json.dumps(checked.to_json())


def test_the_cards_of_the_last_step_are_proposed_again_and_keep_their_places_while_safe(realistic):
    """A card the operator saw is simulated again at the next step whatever the expert proposes
    then, and while it is still a recommendation it stays among the cards, below the safest."""
    env, space, features, sac = realistic
    # no policy here: the shortlist's place for a safe policy proposal is another rule
    pipeline = RecommendationPipeline(env, space, PipelineConfig(expert_budget=64))
    states = _stressed_states(env, space, chronic=0, start=505, count=8, threshold=0.98)
    runs = ((i, pipeline.run(obs)) for i, obs in enumerate(states[:-1]))
    at, first = next((i, r) for i, r in runs if len(r.recommendations) >= 3)
    fourth = first.recommendations[-1]
    shown = shortlist(first.recommendations, 2, carried={fourth.action_index})
    assert [c.action_index for c in shown] == [first.recommendations[0].action_index, fourth.action_index]
    assert [c.rank for c in shown] == [1, 2]
    # an action no source proposes now is simulated because it is carried
    far = next(
        i
        for i in range(space.first_topology, space.n)
        if i not in {c.action_index for c in (*first.recommendations, *first.rejected)}
    )
    again = pipeline.run(states[at + 1], carried={far: ("expert",)})
    judged = {c.action_index: c for c in (*again.recommendations, *again.rejected)}
    assert far in judged and judged[far].sources == ("expert",)
    assert (
        shortlist(again.recommendations, 3, carried={far})[0].action_index
        == again.recommendations[0].action_index
    )
    assert shortlist(again.recommendations, 0) == []
