"""The days a live session can choose (ace_core/live/days.py), on real grid2op envs: each dated as
grid2op dates its first step, with its season and split; doing nothing's survival played with the
Runner, the same as stepping doing nothing by hand; kept in a cache that plays each day once and
ignores a file made otherwise."""

from __future__ import annotations

import json

import pytest

from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import reset_to, split_of
from ace_core.live import live_scenarios
from ace_core.live.days import DifficultyCache, difficulty_compute, live_days


@pytest.fixture(scope="module")
def realistic():
    """rte_case14_realistic without the chronics cache (as the Runner wants it); doing nothing
    ends its third day (000@576+288) early."""
    env = make_env("rte_case14_realistic", cache_chronics=False)
    yield env
    env.close()


def test_each_day_is_dated_as_grid2op_dates_its_first_step():
    env = make_env("l2rpn_case14_sandbox")
    days = live_days(env)
    scenarios = live_scenarios(env)
    assert [d.scenario for d in days] == scenarios and [d.index for d in days] == list(range(len(scenarios)))
    assert [d.split for d in days] == [split_of(i, len(days)) for i in range(len(days))]
    for day in (days[0], days[1], days[-1]):
        obs = reset_to(env, day.scenario, seed=0)
        assert obs.get_time_stamp() == day.starts
    assert days[0].words.startswith(
        "Sun 6 Jan 2019 00:00 · winter · difficulty not computed yet · train day 0000@0+288"
    )
    assert (days[0].season, days[0].difficulty, days[0].survived) == ("winter", None, None)
    env.close()


def _do_nothing_by_hand(env, scenario) -> int:
    """Steps played until the episode ends, the game over's step included (the Runner's count,
    which evaluation reports use too)."""
    reset_to(env, scenario, seed=0)
    steps, done = 0, False
    while not done:
        _, _, done, _ = env.step(env.action_space({}))
        steps += 1
    return min(steps, scenario.length)


def test_difficulty_is_doing_nothings_survival_played_once_and_cached(realistic, tmp_path):
    env = realistic
    days = live_days(env)[1:4]  # a day doing nothing survives, and two it does not
    cache = DifficultyCache("rte_case14_realistic", tmp_path)
    played = []
    computed = difficulty_compute(env, cache, days, progress=played.append)
    assert [d.scenario.name for d in played] == [d.scenario.name for d in days]
    for day in computed:
        assert day.survived == _do_nothing_by_hand(env, day.scenario)
        assert day.difficulty == day.survived / day.scenario.length
    assert computed[0].survived == computed[0].scenario.length
    assert computed[0].difficulty_words == "doing nothing survives the whole day (288 steps)"
    hard = computed[1]
    assert hard.survived < hard.scenario.length
    assert hard.difficulty_words.startswith(
        f"doing nothing survives {hard.difficulty:.0%} ({hard.survived} of 288 steps"
    )
    # once played, a day is never played again; days not played say so
    again = []
    assert difficulty_compute(env, cache, days, progress=again.append) == computed and again == []
    unplayed = cache.days(live_days(env)[4:6])
    assert [d.survived for d in unplayed] == [None, None]
    assert cache.days(days) == computed


def test_a_cache_file_made_otherwise_or_unreadable_counts_as_empty(tmp_path):
    cache = DifficultyCache("l2rpn_case14_sandbox", tmp_path)
    assert cache.load() == {}
    cache.save({"0000@0+288": 288})
    assert cache.load() == {"0000@0+288": 288}
    data = json.loads(cache.path.read_text())
    data["key"]["grid2op"] = "0.0.1"
    cache.path.write_text(json.dumps(data))
    assert cache.load() == {}  # another grid2op version's figures are not these
    cache.path.write_text("{not json")
    assert cache.load() == {}
    assert DifficultyCache("l2rpn_case14_sandbox", tmp_path, seed=3).load() == {}
