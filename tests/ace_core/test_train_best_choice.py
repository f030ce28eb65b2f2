"""Which validation's policy a run keeps as best.pt, read from the validation's metrics."""

import pytest

from ace_core.training.best_choice import BestChoice


def _metrics(mean: float, as_they_are: float, attacked: float) -> dict[str, float]:
    return {
        "eval/validation_survival": mean,
        "eval/validation_survival_demand_1.0": as_they_are,
        "eval/validation_survival_attacks": attacked,
    }


def test_the_mean_over_the_copies_chooses_by_default_ties_keeping_the_earlier():
    choice = BestChoice()
    first = _metrics(0.6, as_they_are=1.0, attacked=0.2)
    assert choice.prefers(first, None)
    assert not choice.prefers(_metrics(0.6, 0.9, 0.3), first)  # a tie
    assert choice.prefers(_metrics(0.7, 0.8, 0.6), first)
    # a run that played the days as they are only reports their survival as the mean
    assert choice.prefers({"eval/validation_survival": 0.9}, {"eval/validation_survival": 0.8})


def test_a_floor_on_the_days_as_they_are_comes_before_the_attacked_copy():
    choice = BestChoice("attacks", floor=0.95)
    holds = _metrics(0.6, as_they_are=1.0, attacked=0.2)
    loses_ordinary_days = _metrics(0.7, as_they_are=0.9, attacked=0.8)
    assert not choice.prefers(loses_ordinary_days, holds)
    assert choice.prefers(holds, loses_ordinary_days)
    # among policies that hold the days as they are, the attacked copy alone decides
    assert choice.prefers(_metrics(0.5, 0.96, 0.3), holds)
    assert not choice.prefers(_metrics(0.9, 1.0, 0.2), holds)
    # below the floor, too
    assert choice.prefers(_metrics(0.5, 0.5, 0.9), loses_ordinary_days)


@pytest.mark.parametrize(
    "config, choice",
    [
        ({}, BestChoice("mean", 0.0)),  # a run older than the settings
        ({"validation_decides": "attacks", "validation_floor": 0.95}, BestChoice("attacks", 0.95)),
    ],
)
def test_a_runs_settings_name_its_choice(config, choice):
    assert BestChoice.of_config(config) == choice
