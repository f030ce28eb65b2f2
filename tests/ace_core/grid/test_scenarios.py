import pytest

from ace_core.errors import ConfigError
from ace_core.grid.scenarios import SPLITS, cut_episodes, reset_to, scenarios, split_of


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


def test_unknown_split_is_refused(sandbox):
    with pytest.raises(ConfigError, match="accepted: train, validation, test"):
        scenarios(sandbox, "holdout")
