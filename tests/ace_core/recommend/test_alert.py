"""The early warning: raised before a game over the agent cannot avoid, quiet on a day it holds,
and read from the look-ahead's trajectories as the module says."""

from __future__ import annotations

import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.forecasts import ForecastInfo, make_env_with_forecasts
from ace_core.grid.lookahead import LookAhead
from ace_core.grid.names import ElementNames
from ace_core.recommend.alert import FAILURE, OVERLOAD, alert_words, expect_failure
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline

PERFECT = ForecastInfo("perfect", 12)


def _trajectory(max_rho, game_over=None, lines=()):
    return LookAhead(PERFECT, tuple(max_rho), game_over, overloaded_lines=tuple(lines))


def test_the_alert_reads_every_option_looked_ahead():
    calm = _trajectory([0.8, 0.85])
    over = _trajectory([0.9, 1.05, 1.1], lines=[4, 7])
    fails_early = _trajectory([1.2], game_over=2, lines=[3])
    fails_late = _trajectory([0.9, 1.1, 1.3], game_over=4, lines=[7, 3])
    assert not expect_failure([("do nothing", fails_early), ("card", calm)]).raised
    alert = expect_failure([("do nothing", fails_early), ("split sub 4", fails_late)])
    assert (alert.level, alert.in_steps, alert.lines, alert.option) == (FAILURE, 4, (7, 3), "split sub 4")
    assert alert.words.startswith("game over expected in 20 min whatever is done")
    alert = expect_failure([("do nothing", fails_early), ("card", over)])
    assert (alert.level, alert.in_steps, alert.lines) == (OVERLOAD, 2, (4, 7))
    # no look-ahead (a grid without forecasts, or skipped): no alert, never a guess
    skipped = LookAhead(PERFECT, skipped="this grid carries no forecasts")
    assert not expect_failure([("do nothing", skipped), ("card", None)]).raised
    assert expect_failure([]).to_json()["level"] == ""


def test_the_alert_names_its_lines_by_their_one_name():
    """The alert's words leave the lines out; where they are shown, each line is named by its one
    name (the cards' and the diagram's), never by its id."""
    alert = expect_failure([("do nothing", _trajectory([1.2], game_over=2, lines=[2, 0]))])
    assert alert.words == "game over expected in 10 min whatever is done (best option: do nothing)"
    names = ElementNames(
        lines=("Corridor A", "Corridor B", "Corridor C"), substations=(), generators=(), loads=()
    )
    assert alert_words(alert.to_json(), names) == f"{alert.words}; lines at risk: Corridor C, Corridor A"
    assert alert_words(alert.to_json()).endswith("lines at risk: line 2, line 0")  # no names: the ids said so
    assert alert_words(expect_failure([]).to_json(), names) == ""


@pytest.fixture(scope="module")
def realistic():
    """rte_case14_realistic (doing nothing ends day 0 at step 798) with one hour of perfect forecasts."""
    env = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    yield env, build_action_space(env)
    env.close()


def test_the_alert_is_raised_before_a_forced_game_over(realistic):
    """With no move to offer but doing nothing (and reconnecting), the game over doing nothing
    meets at step 798 is announced ahead of it, naming the lines; an hour earlier it is not."""
    env, space = realistic
    pipeline = RecommendationPipeline(env, space, PipelineConfig(policy_k=0, expert_k=0, look_ahead_top=1))
    env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(760)
    obs, noop, done = env.get_obs(), env.action_space({}), False
    alerts = {}
    while not done:
        alerts[int(obs.current_step)] = pipeline.run(obs).alert
        obs, _, done, _ = env.step(noop)
    end = int(obs.current_step)
    assert 790 <= end <= 800
    raised = sorted(step for step, alert in alerts.items() if alert.level == FAILURE)
    assert raised and raised[0] < end - 1, f"no early warning before the game over at {end}"
    first = alerts[raised[0]]
    assert first.lines and first.in_steps <= 12 and first.option == "do nothing"
    assert raised[0] + first.in_steps >= end - 2  # it says when, within a step or two
    assert all(alert.level != FAILURE for step, alert in alerts.items() if step < end - 13)
