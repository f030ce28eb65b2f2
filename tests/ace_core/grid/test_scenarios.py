import pytest

from ace_core.errors import ConfigError
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import SPLITS, Scenario, cut_episodes, learned_in, reset_to, scenarios, split_of
from tests.ace_core.opponent_state import attack_under_way


def test_chronics_are_cut_into_day_episodes():
    episodes = cut_episodes([("a", 8064), ("b", 575)], 288)
    assert len([e for e in episodes if e.chronic_name == "a"]) == 28
    assert [(e.start, e.length) for e in episodes if e.chronic_name == "b"] == [(0, 288), (288, 287)]


def test_a_short_tail_is_dropped():
    assert [(e.start, e.length) for e in cut_episodes([("a", 300)], 288)] == [(0, 288)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 10, 56])
def test_every_env_has_a_test_episode_and_splits_are_disjoint(n):
    splits = [split_of(i, n) for i in range(n)]
    assert "test" in splits and "train" in splits
    assert set(splits) <= set(SPLITS)


def test_splits_are_deterministic_and_disjoint(sandbox):
    named = {split: [s.name for s in scenarios(sandbox, split)] for split in SPLITS}
    assert named == {split: [s.name for s in scenarios(sandbox, split)] for split in SPLITS}
    assert not set(named["test"]) & set(named["train"])
    assert not set(named["validation"]) & set(named["train"])
    assert sum(map(len, named.values())) == 6  # 3 chronics of 575 steps, 2 episodes each


def test_reset_to_starts_at_the_offset_with_the_length(sandbox):
    scenario = [s for s in scenarios(sandbox, "train") if s.start > 0][0]
    reset_to(sandbox, scenario, seed=3)
    steps = 0
    done = False
    while not done:
        obs, _, done, _ = sandbox.step(sandbox.action_space({}))
        steps += 1
    assert steps == scenario.length
    sandbox.reset(seed=0, options={"time serie id": 0})  # the env is shared by the session


def test_an_attack_under_way_at_the_end_of_an_episode_does_not_reach_the_next_start():
    env, fresh = (make_env("l2rpn_case14_sandbox", opponent="random-line") for _ in range(2))
    scenario = [s for s in scenarios(env, "train") if s.start > 1][0]
    line = 3
    # grid2op's own reset plays the fast-forward step under the old attack (the opponent is
    # reset after it): the line would start the new episode out
    env.reset(seed=0, options={"time serie id": 0})
    attack_under_way(env, line)
    assert not env.reset(seed=5, options=scenario.reset_options()).line_status[line]

    reset_to(env, scenarios(env, "train")[0], seed=0)
    attack_under_way(env, line)
    started = reset_to(env, scenario, seed=5)
    expected = reset_to(fresh, scenario, seed=5)
    assert started.line_status.all()
    assert (started.rho == expected.rho).all() and started.current_step == expected.current_step


def test_unknown_split_is_refused(sandbox):
    with pytest.raises(ConfigError, match="accepted: train, validation, test"):
        scenarios(sandbox, "holdout")


def test_a_scenario_name_reads_back_and_overlaps_by_steps_of_one_chronic():
    day = Scenario.from_name("2050-01-03_gridace0w000@288+288")
    assert (day.chronic_name, day.start, day.length) == ("2050-01-03_gridace0w000", 288, 288)
    assert Scenario.from_name(day.name).name == day.name
    assert day.shares_steps(Scenario(0, day.chronic_name, 0, 289))  # one step in common
    assert not day.shares_steps(Scenario(0, day.chronic_name, 0, 288))  # the day before
    assert not day.shares_steps(Scenario(1, "Scenario_august_dummy", 288, 288))  # another chronic
    for bad in ("Scenario_august_dummy", "a@x+1", "a@1", "@0+288"):
        with pytest.raises(ConfigError, match="accepted: CHRONIC@START"):
            Scenario.from_name(bad)


def test_another_cut_of_the_split_makes_a_train_day_a_test_day():
    """Grown weeks sort before the bundled days: two bundled train days with two weeks (14 days
    before them) are test days with four (28 before them); and a three-day test window covers a
    train day of the one-day cut. :func:`learned_in` names them."""
    bundled = [("Scenario_august_dummy", 2016)]
    two = cut_episodes([(f"w{k}", 2016) for k in range(2)] + bundled)
    four = cut_episodes([(f"w{k}", 2016) for k in range(4)] + bundled)
    trained = [s.name for i, s in enumerate(two) if split_of(i, len(two)) == "train"]
    tested = [s for i, s in enumerate(four) if split_of(i, len(four)) == "test"]
    assert [(s.name, day) for s, day in learned_in(tested, trained)] == [
        (f"Scenario_august_dummy@{start}+288",) * 2 for start in (288, 1728)
    ]
    one_day = cut_episodes(bundled)
    trained = [s.name for i, s in enumerate(one_day) if split_of(i, len(one_day)) == "train"]
    three_days = cut_episodes(bundled, 864)  # two windows (the last 288 steps too short a piece)
    assert [(s.name, day) for s, day in learned_in(three_days[1:], trained)] == [
        ("Scenario_august_dummy@864+864", "Scenario_august_dummy@1440+288")
    ]
