"""What a reviewer weighs, in words: the verdict on the LLM's action against the RL action, the
grid state's own step, and a round's answer apart from its scores.

The verdict's vocabulary
------------------------
The trainer keeps an LLM action when its simulated reward beats the RL action's by any amount
("better than RL in simulation"). Better is not safe: the reward is the thermal margin of the most
loaded line (``1 - max rho``, :mod:`ace_core.grid.reward`), so an action that leaves a line at
199 % may still beat one that leaves it at 200 %. The page therefore says:

- **safe and better than RL** only when the LLM action leaves no overload (max rho below 100 %)
  *and* beats the RL action's reward by at least :data:`SAFE_MARGIN`, i.e. lowers the most
  loaded line by at least 2 points of its thermal limit; a smaller gain leaves the grid practically
  where the RL action left it, so it is not called better;
- **better than RL, still unsafe** (amber) when the LLM action beats the RL action but leaves an
  overload;
- **slightly better than RL** (amber) when it leaves no overload but gains less than the margin;
- **not better than RL** when simulation kept the RL action, and **no LLM action** when the LLM
  proposed nothing that could be simulated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ace_core.grid.outcome import OVERLOAD
from ace_core.llm.backend import NOT_SCORED

SAFE_MARGIN = 0.02
"""the reward gain (max-rho points: 0.02 = 2 % of a line's thermal limit) by which the LLM action
must beat the RL action to be called better"""

SAFE_AND_BETTER = "safe and better than RL"
STILL_UNSAFE = "better than RL, still unsafe"
SLIGHTLY_BETTER = "slightly better than RL"
NOT_BETTER = "not better than RL"
NO_ACTION = "no LLM action"


@dataclass(frozen=True)
class Verdict:
    """The LLM action's verdict: its words, the page's tone (``ok``, ``warn`` or ``muted``) and
    a sentence that says why."""

    words: str
    tone: str
    why: str


def _load(max_rho: float | None) -> str:
    """A simulated max rho in words; the trainer records -1 (or nothing) for a failed simulation."""
    return "a game over in simulation" if max_rho is None or max_rho < 0 else f"max rho {max_rho:.1%}"


def refinement_verdict(
    *,
    accepted: bool,
    rl_reward: float,
    rl_max_rho: float,
    llm_reward: float | None,
    llm_max_rho: float | None,
) -> Verdict:
    """The verdict on an LLM action (module docstring): ``accepted`` is the trainer's simulation
    gate (reward above the RL action's), the rest are the two actions' simulated figures."""
    if llm_reward is None:
        return Verdict(NO_ACTION, "muted", "The LLM proposed no action that simulation could judge.")
    if not accepted:
        return Verdict(
            NOT_BETTER,
            "muted",
            f"Simulated reward {llm_reward:.4f} against the RL action's {rl_reward:.4f}: the RL action stands.",
        )
    gain = llm_reward - rl_reward
    rl = f"the RL action: {_load(rl_max_rho)}"
    if llm_max_rho is None or llm_max_rho < 0 or llm_max_rho >= OVERLOAD:
        left = "a line is still overloaded" if llm_max_rho is not None and llm_max_rho >= 0 else "it fails"
        return Verdict(
            STILL_UNSAFE,
            "warn",
            f"Its reward beats the RL action's by {gain:.4f}, but {left}: {_load(llm_max_rho)} ({rl}).",
        )
    if gain < SAFE_MARGIN:
        return Verdict(
            SLIGHTLY_BETTER,
            "warn",
            f"No overload ({_load(llm_max_rho)}; {rl}), but its reward beats the RL action's by only "
            f"{gain:.4f}, under the {SAFE_MARGIN:g} margin.",
        )
    return Verdict(
        SAFE_AND_BETTER,
        "ok",
        f"No overload ({_load(llm_max_rho)}; {rl}), and its reward beats the RL action's by {gain:.4f}, "
        f"at least the {SAFE_MARGIN:g} margin.",
    )


_STATE_STEP = re.compile(r"^Step (\d+)\b")


def state_step(state_text: str) -> int | None:
    """The step of the episode the grid state describes (the state text starts "Step 93 (...)"),
    None when the text does not say."""
    match = _STATE_STEP.match(state_text)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Answer:
    """A round's response split into what the LLM answered and the scores behind it."""

    text: str
    scores: list[tuple[str, str]]
    """(option label, log-probability) for each option offered"""
    content_free: list[tuple[str, str]]
    """the same with the grid replaced by N/A (empty: not calibrated)"""

    @property
    def rows(self) -> list[tuple[str, str, str]]:
        """(label, score, content-free score or "") for each option."""
        prior = dict(self.content_free)
        return [(label, score, prior.get(label, "")) for label, score in self.scores]


_SCORES_START = " (scores: "
_PRIOR_START = "; content-free: "
_SCORE = re.compile(r"(?P<label>.+?) (?P<score>-?(?:\d+\.\d+|inf|nan))(?:, |$)", re.S)


def _pairs(text: str) -> list[tuple[str, str]]:
    """``A -1.20, B -0.80`` as [(A, -1.20), (B, -0.80)]; a label may hold commas and spaces (an
    option's own text), a score is always a decimal number (or inf)."""
    return [(m.group("label"), _score(m.group("score"))) for m in _SCORE.finditer(text)]


def _score(text: str) -> str:
    """A score as written, or "not scored" for the backend's mark of a label it could not score."""
    return "not scored" if float(text) <= NOT_SCORED else text


def round_answer(response: str) -> Answer:
    """The answer and scores of a round's response (the actor writes ``C (scores: A -1.20, B
    -0.80, C -0.10; content-free: ...)``); a response in another form is all answer."""
    response = response.strip()
    start = response.find(_SCORES_START)
    if start < 0 or not response.endswith(")"):
        return Answer(response, [], [])
    scored, _, prior = response[start + len(_SCORES_START) : -1].partition(_PRIOR_START)
    return Answer(response[:start], _pairs(scored), _pairs(prior))
