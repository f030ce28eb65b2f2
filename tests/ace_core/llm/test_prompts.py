import pytest

from ace_core.llm import prompts


def test_actor_prompt_has_prefix_state_bad_example_and_labelled_options():
    messages = prompts.actor_messages(
        "Max line load 112% on line 4.",
        "do nothing",
        -0.12,
        1.12,
        ["reconnect line 7", "substation 5: load 1 to bus 2"],
    )
    assert messages[0] == {"role": "system", "content": prompts.SYSTEM_PREFIX}
    user = messages[1]["content"]
    assert "Max line load 112% on line 4." in user
    assert "The RL agent chose: do nothing" in user and "reward -0.120" in user and "112%" in user
    assert "A) reconnect line 7\nB) substation 5: load 1 to bus 2" in user
    assert user.endswith("Answer with the letter only.")


def test_feedback_says_not_better_and_relabels_the_remaining_options():
    message = prompts.feedback_message(
        "reconnect line 7", -0.2, 1.2, -0.1, ["do nothing", "substation 3: all elements to bus 1"]
    )
    assert message["role"] == "user"
    text = message["content"]
    assert "reconnect line 7: reward -0.200, max line load 120%" in text
    assert "not better than the RL action" in text
    assert "A) do nothing\nB) substation 3" in text
    failed = prompts.feedback_message("x", None, None, -0.1, ["y"])["content"]
    assert "simulation failed" in failed


def test_critic_prompt_lists_the_trajectory_and_the_allowed_adjustments():
    steps = [
        prompts.TrajectoryStep(3, 0.95, "do nothing", 0.05),
        prompts.TrajectoryStep(9, 1.3, "reconnect line 2", -1.0),
    ]
    messages = prompts.critic_messages(steps, "blackout at step 10 of 288", k=0.1, max_key_steps=3)
    user = messages[1]["content"]
    assert "step 3: max load 95%, action: do nothing, reward 0.05" in user
    assert "step 9: max load 130%, action: reconnect line 2, reward -1.00" in user
    assert "-2K, -K, +K, +2K (K = 0.1)" in user and "at most 3 key decision steps" in user
    assert '"key_steps"' in user and "blackout at step 10" in user


def test_choice_prompts_refuse_empty_or_too_long_lists():
    with pytest.raises(ValueError, match="at least one"):
        prompts.actor_messages("s", "a", 0.0, 0.5, [])
    with pytest.raises(ValueError, match="at most 26"):
        prompts.actor_messages("s", "a", 0.0, 0.5, ["x"] * 27)


def test_text_answers_end_with_a_stop_so_no_label_prefixes_another():
    labels = prompts.answer_labels(["reconnect line 1", "reconnect line 10"], "text")
    assert labels == ["reconnect line 1.", "reconnect line 10."]
    assert not any(a != b and b.startswith(a) for a in labels for b in labels)
    assert prompts.answer_labels(["x", "y"], "letter") == ["A", "B"]
