"""The texts the LLM reads: actor prompt, retry feedback, critic prompt.

Kept short on purpose: the offline default is a 135M-parameter model with a few hundred tokens
of useful attention, and prompt length dominates the time of a choice on a CPU.

- **Actor** (Policy Actor, f_LLM): task and domain knowledge, ``T_s(s)``, the RL action as a bad
  example with its simulated outcome, and a shortlist of candidate actions in words labelled
  ``A``, ``B``, ...; the answer is a bare letter (scored by :meth:`LLMBackend.choose`), or, with
  ``answer="text"``, the options are listed unlabelled and the answer is the chosen option's text.
- **Feedback** (retry rounds): the tried option's simulated outcome, "not better than the RL
  action", and the remaining options relabelled.
- **Content-free** versions of both (state, actions and numbers replaced by ``N/A``): what the
  model answers to the bare format, its letter prior, for contextual calibration.
- **Explanation** (the operator's console): why a recommendation helps, in two plain sentences.
- **Critic** (Value Critic, g_LLM): a compact trajectory (decision step, max rho, action in
  words, reward) and either a request for strict JSON naming key steps with adjustments in
  {-2K, -K, +K, +2K} (``json`` format), or two letter questions per key step (``choice`` format):
  which listed decision caused the outcome, then which of the four adjustments it deserves.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

LABELS = tuple(string.ascii_uppercase)
"""Choice labels; single letters are never token-prefixes of one another."""

ADJUSTMENTS = ("-2K", "-K", "+K", "+2K")

_ANSWER_INSTRUCTION = {
    "letter": "Answer with the letter only.",
    "text": "Answer by copying that option's text exactly.",
}

CONTENT_FREE = "N/A"
"""What replaces the content of a prompt in its content-free version (Zhao et al. 2021)."""

SYSTEM_PREFIX = (
    "You assist the operator of a power transmission grid. Each line has a loading rho = flow / "
    "thermal limit; a line above 100% is overloaded and will trip if nothing is done, which can "
    "cascade into a blackout. Useful actions: split a substation into two buses (elements on bus "
    "2 are separated from bus 1), which reroutes power away from the overloaded line; put a "
    "substation back on one bus; reconnect a disconnected line, which adds capacity; or do "
    "nothing when the grid is safe. Prefer actions at the substations at the ends of the most "
    "loaded lines. The reward of a step is 1 - max rho (higher is better, -1 on a blackout)."
)


def actor_messages(
    state: str,
    rl_action: str,
    rl_reward: float,
    rl_max_rho: float,
    candidates: Sequence[str],
    answer: str = "letter",
) -> list[dict]:
    """Round-1 prompt: pick the candidate that beats the RL agent's action, by its letter or by
    copying its text (``answer``, see :func:`answer_labels`)."""
    return _actor_messages(state, rl_action, f"{rl_reward:.3f}", _percent(rl_max_rho), candidates, answer)


def content_free_actor_messages(n_candidates: int) -> list[dict]:
    """Round-1 prompt with every piece of content replaced by N/A (the letter prior's probe)."""
    return _actor_messages(
        CONTENT_FREE, CONTENT_FREE, CONTENT_FREE, CONTENT_FREE, [CONTENT_FREE] * n_candidates, "letter"
    )


def _actor_messages(
    state: str, rl_action: str, reward: str, max_load: str, candidates: Sequence[str], answer: str
) -> list[dict]:
    _check_candidates(candidates)
    user = (
        f"Grid state: {state}\n"
        f"The RL agent chose: {rl_action}. Simulated outcome: reward {reward}, max line load "
        f"{max_load}. This is a bad decision; find a better one.\n"
        f"Options:\n{_listed(candidates, answer)}\n"
        f"Which option gives a lower max line load? {_ANSWER_INSTRUCTION[answer]}"
    )
    return [{"role": "system", "content": SYSTEM_PREFIX}, {"role": "user", "content": user}]


def feedback_message(
    tried: str,
    reward: float | None,
    max_rho: float | None,
    rl_reward: float,
    candidates: Sequence[str],
    answer: str = "letter",
) -> dict:
    """The user turn after an option that simulation did not validate."""
    if reward is None:
        outcome = "the simulation failed (illegal action or blackout)"
    else:
        outcome = f"reward {reward:.3f}, max line load {_percent(max_rho)}"
    return _feedback_message(tried, outcome, f"{rl_reward:.3f}", candidates, answer)


def content_free_feedback(n_candidates: int) -> dict:
    """The feedback turn with its content replaced by N/A."""
    return _feedback_message(
        CONTENT_FREE, CONTENT_FREE, CONTENT_FREE, [CONTENT_FREE] * n_candidates, "letter"
    )


def _feedback_message(
    tried: str, outcome: str, rl_reward: str, candidates: Sequence[str], answer: str
) -> dict:
    _check_candidates(candidates)
    return {
        "role": "user",
        "content": (
            f"Simulated: {tried}: {outcome}. That is not better than the RL action (reward "
            f"{rl_reward}). Choose another option:\n{_listed(candidates, answer)}\n"
            f"{_ANSWER_INSTRUCTION[answer]}"
        ),
    }


def answer_labels(candidates: Sequence[str], answer: str) -> list[str]:
    """What the chooser scores for each candidate: its letter (``letter``), or its own text ended by
    a full stop (``text``: the answer names the action, so no position or letter stands for it; the
    stop keeps "reconnect line 1" from being a prefix of "reconnect line 10")."""
    if answer == "letter":
        return list(LABELS[: len(candidates)])
    return [f"{text}." for text in candidates]


def _listed(candidates: Sequence[str], answer: str) -> str:
    if answer == "letter":
        return options_text(candidates)
    return "\n".join(f"- {text}" for text in candidates)


def options_text(candidates: Sequence[str]) -> str:
    return "\n".join(f"{label}) {text}" for label, text in zip(LABELS, candidates))


@dataclass(frozen=True)
class TrajectoryStep:
    """One agent decision of a finished episode, as the critic reads it."""

    step: int
    """step within the episode"""
    max_rho: float
    action: str
    """the action in words"""
    reward: float
    """the first step's reward after the decision"""


def trajectory_text(steps: Sequence[TrajectoryStep]) -> str:
    return "\n".join(_step_lines(steps))


def critic_messages(
    steps: Sequence[TrajectoryStep], outcome: str, k: float, max_key_steps: int
) -> list[dict]:
    """Ask for the key decisions of a trajectory and a reward adjustment for each, as strict JSON."""
    user = (
        f"Decisions of one episode ({outcome}):\n{trajectory_text(steps)}\n"
        f"Find at most {max_key_steps} key decision steps that caused the later outcome, good or "
        f"bad. For each give an adjustment of its reward: one of -2K, -K, +K, +2K (K = {k:g}): "
        "negative for decisions that led to overloads or the blackout, positive for decisions "
        "that relieved the grid. Reply with JSON only, in this form: "
        '{"key_steps": [{"step": 12, "adjustment": "-K"}], "rationale": "one line"}'
    )
    return [{"role": "system", "content": SYSTEM_PREFIX}, {"role": "user", "content": user}]


def critic_step_messages(steps: Sequence[TrajectoryStep], outcome: str) -> list[dict]:
    """Choice format, first question: the letter of the decision that most caused the outcome."""
    user = (
        f"Decisions of one episode ({outcome}), labelled:\n{options_text(_step_lines(steps))}\n"
        "Which decision most caused the outcome, good or bad? Answer with the letter only."
    )
    return [{"role": "system", "content": SYSTEM_PREFIX}, {"role": "user", "content": user}]


def critic_adjustment_message(step: TrajectoryStep, k: float) -> dict:
    """Choice format, second question (after the chosen step's letter): its adjustment's letter."""
    meanings = (
        "it caused overloads or the blackout",
        "it made the grid worse",
        "it relieved the grid",
        "it saved the grid",
    )
    options = [f"{value}: {meaning}" for value, meaning in zip(ADJUSTMENTS, meanings)]
    return {
        "role": "user",
        "content": (
            f"How should the reward of step {step.step} ({step.action}) be adjusted (K = {k:g})?\n"
            f"{options_text(options)}\nAnswer with the letter only."
        ),
    }


def _step_lines(steps: Sequence[TrajectoryStep]) -> list[str]:
    return [
        f"step {s.step}: max load {_percent(s.max_rho)}, action: {s.action}, reward {s.reward:.2f}"
        for s in steps
    ]


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0%}"


def _check_candidates(candidates: Sequence[str]) -> None:
    if not candidates:
        raise ValueError("a choice prompt needs at least one candidate action")
    if len(candidates) > len(LABELS):
        raise ValueError(f"{len(candidates)} candidates; at most {len(LABELS)} can be labelled")


def explain_messages(*, state_text: str, card: dict[str, Any]) -> list[dict[str, str]]:
    """The chat asking an LLM to explain a recommendation to an operator, in plain words (``card``:
    its description, source and max rho after, and the simulation's ``facts`` in words if any)."""
    after = card.get("max_rho_after")
    effect = f"expected max line load after: {after:.0%}" if after is not None else "the simulation failed"
    # the simulation's findings (ace_core.recommend.explain.facts), so the model can quote them
    facts = f"\nWhat the simulation found: {card['facts']}" if card.get("facts") else ""
    return [
        {
            "role": "system",
            "content": "You are a power grid operator assistant. Explain recommendations briefly and plainly.",
        },
        {
            "role": "user",
            "content": f"Grid state: {state_text}\nRecommended action: {card['description']} "
            f"(from the {card['source']}, {effect}).{facts}\nIn two sentences, why does this action help?",
        },
    ]
