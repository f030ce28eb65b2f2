"""The verdict's vocabulary on an LLM action, the grid state's step and a round's answer apart
from its scores (:mod:`webapp.review.evidence`)."""

from __future__ import annotations

import pytest

from webapp.review.evidence import (
    NO_ACTION,
    NOT_BETTER,
    SAFE_AND_BETTER,
    SAFE_MARGIN,
    SLIGHTLY_BETTER,
    STILL_UNSAFE,
    refinement_verdict,
    round_answer,
    state_step,
)


def test_a_better_action_that_leaves_an_overload_is_never_called_safe():
    # the case reviewers met: it beat the RL action only on reward, and left a line at 199.1 %
    verdict = refinement_verdict(
        accepted=True, rl_reward=-1.0, rl_max_rho=2.0, llm_reward=-0.9907, llm_max_rho=1.991
    )
    assert verdict.words == STILL_UNSAFE and verdict.tone == "warn"
    assert "safe and" not in verdict.words
    assert "max rho 199.1%" in verdict.why and "max rho 200.0%" in verdict.why
    # even far better on reward: an overload left is unsafe
    verdict = refinement_verdict(
        accepted=True, rl_reward=-1.0, rl_max_rho=-1.0, llm_reward=-0.02, llm_max_rho=1.02
    )
    assert verdict.words == STILL_UNSAFE and "a game over in simulation" in verdict.why


def test_safe_and_better_needs_no_overload_and_the_margin():
    below = refinement_verdict(
        accepted=True, rl_reward=0.10, rl_max_rho=0.90, llm_reward=0.11, llm_max_rho=0.89
    )
    assert below.words == SLIGHTLY_BETTER and below.tone == "warn"
    gain = SAFE_MARGIN + 0.01
    safe = refinement_verdict(
        accepted=True, rl_reward=0.10, rl_max_rho=0.90, llm_reward=0.10 + gain, llm_max_rho=0.90 - gain
    )
    assert safe.words == SAFE_AND_BETTER and safe.tone == "ok"
    # exactly at 100 % is an overload (rho >= 1), however large the gain
    edge = refinement_verdict(accepted=True, rl_reward=-0.5, rl_max_rho=1.5, llm_reward=0.0, llm_max_rho=1.0)
    assert edge.words == STILL_UNSAFE


def test_a_kept_rl_action_and_a_missing_llm_action_have_their_own_words():
    kept = refinement_verdict(accepted=False, rl_reward=0.2, rl_max_rho=0.8, llm_reward=0.1, llm_max_rho=0.9)
    assert kept.words == NOT_BETTER and "the RL action stands" in kept.why
    none = refinement_verdict(
        accepted=False, rl_reward=0.2, rl_max_rho=0.8, llm_reward=None, llm_max_rho=None
    )
    assert none.words == NO_ACTION


@pytest.mark.parametrize(
    ("text", "step"),
    [("Step 93 (2019-01-06 07:45). Max line load 80% on line 1-4.", 93), ("no step here", None)],
)
def test_the_state_step_is_read_from_the_state_text(text, step):
    assert state_step(text) == step


def test_a_rounds_answer_comes_apart_from_its_scores():
    letter = round_answer(
        "C (scores: A -1.20, B -0.80, C -10000.00; content-free: A -2.00, B -1.00, C -0.50)"
    )
    assert letter.text == "C"
    assert letter.rows == [("A", "-1.20", "-2.00"), ("B", "-0.80", "-1.00"), ("C", "not scored", "-0.50")]
    # text answers: the option's own words, commas and semicolons included
    text = round_answer(
        "substation 5: line 4-5, generator 2 to bus 2; others on bus 1. (scores: "
        "substation 4: line 4-5 to bus 2; others on bus 1. -3.25, "
        "substation 5: line 4-5, generator 2 to bus 2; others on bus 1. -0.75)"
    )
    assert text.text == "substation 5: line 4-5, generator 2 to bus 2; others on bus 1."
    assert [score for _, score, _ in text.rows] == ["-3.25", "-0.75"]
    assert text.scores[1][0] == "substation 5: line 4-5, generator 2 to bus 2; others on bus 1."
    assert round_answer("garbage without scores").text == "garbage without scores"
