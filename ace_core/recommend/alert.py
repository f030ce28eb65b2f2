"""The agent's early warning: it expects the grid to fail within the look-ahead's horizon whatever
it recommends (after L2RPN 2023's alert task and ICAPS 2021's alarms).

The pipeline looks ahead for doing nothing and for its best few candidates
(:mod:`ace_core.grid.lookahead`: each kept, nothing else done, over the forecasts' horizon). The
alert reads those trajectories:

- ``failure`` (critical): every option looked ahead ends in a game over within the horizon. The
  expected time is the latest of those game overs (the best the agent has);
- ``overload`` (warning): every option reaches an overload within the horizon, though one at
  least survives it;
- none otherwise, or when there is no look-ahead (a grid without forecasts).

The lines it names are the best option's overloaded lines, in the order they get there. An
alert is only as good as the forecasts: an attack or a trip the forecasts do not carry comes
unannounced. Its precision and recall against the failures that happened are measured by
``bench/alerts.py`` (docs/results-stress.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ace_core.grid.forecasts import STEP_MINUTES
from ace_core.grid.lookahead import LookAhead
from ace_core.grid.names import ElementNames

FAILURE = "failure"
OVERLOAD = "overload"


@dataclass(frozen=True)
class Alert:
    """What the agent expects within the horizon when it acts as best it can."""

    level: str = ""
    """``failure``, ``overload`` or empty (nothing expected)"""
    in_steps: int | None = None
    """steps (5 minutes each) until the expected game over or first overload of the best option"""
    lines: tuple[int, ...] = ()
    """the lines the best option overloads, in the order they get there"""
    option: str = ""
    """the best option looked ahead (a card's description, or doing nothing)"""

    @property
    def raised(self) -> bool:
        return bool(self.level)

    @property
    def words(self) -> str:
        """What is expected, when and the best option, in words. The lines are not in it: they
        are named by their one name where the words are shown (:func:`alert_words`)."""
        if not self.level:
            return ""
        minutes = self.in_steps * STEP_MINUTES
        what = "game over expected" if self.level == FAILURE else "overload expected"
        return f"{what} in {minutes} min whatever is done (best option: {self.option})"

    def to_json(self) -> dict:
        return {
            "level": self.level,
            "in_steps": self.in_steps,
            "in_minutes": None if self.in_steps is None else self.in_steps * STEP_MINUTES,
            "lines": list(self.lines),
            "option": self.option,
            "words": self.words,
        }


def alert_words(alert: dict, names: ElementNames | None = None) -> str:
    """An alert's JSON (:meth:`Alert.to_json`) in words, its lines by their one name
    (:mod:`ace_core.grid.names`; ``line <id>`` without ``names``); empty when nothing is expected."""
    if not alert.get("level"):
        return ""
    lines = alert.get("lines") or []
    if not lines:
        return alert["words"]
    named = names.lines_of(lines) if names is not None else ", ".join(f"line {int(i)}" for i in lines)
    return f"{alert['words']}; lines at risk: {named}"


def expect_failure(options: list[tuple[str, LookAhead | None]]) -> Alert:
    """The alert from the looked-ahead ``options`` (description, look-ahead); those without a
    look-ahead, or whose look-ahead was skipped, are not counted. No option looked ahead: none."""
    looked = [
        (words, la)
        for words, la in options
        if la is not None and not la.skipped and (la.max_rho or la.game_over_step is not None)
    ]
    if not looked:
        return Alert()
    if all(la.game_over_step is not None for _, la in looked):
        words, best = max(looked, key=lambda o: (o[1].game_over_step, -len(o[1].overloaded_lines)))
        return Alert(FAILURE, best.game_over_step, best.overloaded_lines, words)
    survivors = [(words, la) for words, la in looked if la.game_over_step is None]
    if all(la.first_overload_step is not None for _, la in survivors):
        words, best = max(survivors, key=lambda o: (o[1].first_overload_step, -o[1].worst_rho))
        return Alert(OVERLOAD, best.first_overload_step, best.overloaded_lines, words)
    return Alert()
