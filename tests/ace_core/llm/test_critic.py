"""The Value Critic: both answer formats (scored choices, strict untrusted JSON), trajectory
selection, bounded adjustments."""

import json

import pytest

from ace_core.errors import ConfigError
from ace_core.llm.critic import (
    CriticConfig,
    TracedDecision,
    Trajectory,
    ValueCritic,
    parse_adjustments,
    select,
    shown_decisions,
)
from ace_core.llm.openai_compat import OpenAICompatBackend
from tests.ace_core.conftest import ChatServer

K = 0.1
STEPS = {3, 7, 9}


def test_allowed_adjustments_are_parsed_from_strict_json():
    reply = json.dumps(
        {
            "key_steps": [
                {"step": 3, "adjustment": "-2K", "why": "split the wrong substation"},
                {"step": 7, "adjustment": "+K"},
                {"step": 9, "adjustment": 0.2},
            ],
            "rationale": "the split at step 3 overloaded line 4",
        }
    )
    adjustments, rationale, refused = parse_adjustments("```json\n" + reply + "\n```", K, STEPS, 5)
    assert [(a.step, a.value) for a in adjustments] == [(3, -0.2), (7, 0.1), (9, 0.2)]
    assert adjustments[0].rationale == "split the wrong substation"
    assert adjustments[1].rationale == rationale == "the split at step 3 overloaded line 4"
    assert refused == []


@pytest.mark.parametrize(
    "item, reason",
    [
        ({"step": 4, "adjustment": "-K"}, "not one of the decision steps shown"),
        ({"step": "3", "adjustment": "-K"}, "not one of the decision steps shown"),
        ({"step": True, "adjustment": "-K"}, "not one of the decision steps shown"),
        ({"step": 3, "adjustment": "-3K"}, "accepted: -2K, -K, +K, +2K"),
        ({"step": 3, "adjustment": 0.15}, "accepted: -2K, -K, +K, +2K"),
        ({"step": 3, "adjustment": 1e9}, "accepted: -2K, -K, +K, +2K"),
        ({"step": 3}, "accepted: -2K, -K, +K, +2K"),
        ("step 3 is bad", "is not an object"),
    ],
)
def test_bad_items_are_refused_and_never_applied(item, reason):
    adjustments, _, refused = parse_adjustments(json.dumps({"key_steps": [item]}), K, STEPS, 5)
    assert adjustments == [] and len(refused) == 1 and reason in refused[0]


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("I think step 3 was bad.", "no JSON object"),
        ('{"key_steps": [{"step": 3, "adjustment": "-K"}', "invalid JSON"),
        ('{"steps": []}', "key_steps list"),
        ("", "no JSON object"),
    ],
)
def test_garbage_replies_are_refused(reply, reason):
    adjustments, _, refused = parse_adjustments(reply, K, STEPS, 5)
    assert adjustments == [] and reason in refused[0]


def test_duplicates_and_too_many_key_steps_are_refused():
    items = [{"step": s, "adjustment": "-K"} for s in (3, 3, 7, 9)]
    adjustments, _, refused = parse_adjustments(json.dumps({"key_steps": items}) + " trailing", K, STEPS, 2)
    assert [a.step for a in adjustments] == [3, 7]
    assert any("twice" in r for r in refused) and any("more than 2" in r for r in refused)
    assert any("ignored text after" in r for r in refused)


def _trajectory(episode, rewards, rhos=None, actions=None, survived=288):
    decisions = [
        TracedDecision(
            step=10 * i,
            row=100 * episode + i,
            max_rho=(rhos or [0.95] * len(rewards))[i],
            action=(actions or [0] * len(rewards))[i],
            step_reward=r,
        )
        for i, r in enumerate(rewards)
    ]
    return Trajectory(episode, survived, 288, decisions)


def test_selection_by_reward_state_and_action():
    calm = _trajectory(0, [0.1, 0.05])  # nothing above the threshold: never eligible
    blackout = _trajectory(1, [0.0, -1.0], rhos=[0.95, 1.1], survived=20)
    stressed = _trajectory(2, [-0.6, 0.0], rhos=[1.6, 0.9])
    diverse = _trajectory(3, [-0.55, 0.0, 0.0], actions=[4, 5, 6])
    pool = [calm, blackout, stressed, diverse]
    assert select(pool, "reward", 0.5, 1) == [blackout]
    assert select(pool, "state", 0.5, 1) == [stressed]
    assert select(pool, "action", 0.5, 1) == [diverse]
    assert calm not in select(pool, "reward", 0.5, 4)


def test_long_trajectories_show_the_extreme_and_the_last_decisions():
    trajectory = _trajectory(0, [0.0] * 50 + [-0.9] + [0.0] * 49)
    shown = shown_decisions(trajectory, 8)
    assert len(shown) == 8 and shown == sorted(shown, key=lambda d: d.step)
    assert 500 in {d.step for d in shown} and shown[-1].step == 990


def test_critic_asks_a_server_and_returns_only_allowed_adjustments(chat_server):
    answer = {
        "key_steps": [{"step": 10, "adjustment": "-2K"}, {"step": 999, "adjustment": "+K"}],
        "rationale": "step 10 left line 4 overloaded",
    }
    chat_server.script = [("json", 200, ChatServer.reply(json.dumps(answer)))]
    backend = OpenAICompatBackend(chat_server.url, "critic", max_retries=0)
    critic = ValueCritic(
        backend, lambda index: f"action {index}", CriticConfig(k=K, prefill=False, format="json")
    )
    result = critic.criticise(_trajectory(1, [0.0, -1.0], survived=20))
    assert [(a.step, a.value) for a in result.adjustments] == [(10, -0.2)]
    assert len(result.refused) == 1 and "999" in result.refused[0]
    assert "step 10: max load 95%, action: action 0" in chat_server.requests[0]["messages"][1]["content"]
    assert result.error == "" and result.rationale == "step 10 left line 4 overloaded"


def test_a_failing_llm_is_an_error_not_an_exception(chat_server):
    chat_server.script = [("json", 500, {"error": {"message": "boom"}})]
    backend = OpenAICompatBackend(chat_server.url, "critic", max_retries=0)
    result = ValueCritic(backend, str, CriticConfig(prefill=False, format="json")).criticise(
        _trajectory(1, [-1.0])
    )
    assert result.adjustments == [] and "LLMError" in result.error


def test_the_local_tiny_model_continues_the_prefill(tiny_long_model_dir):
    from ace_core.llm.local import LocalBackend

    critic = ValueCritic(
        LocalBackend(tiny_long_model_dir, threads=1), str, CriticConfig(max_new_tokens=12, format="json")
    )
    result = critic.criticise(_trajectory(1, [0.0, -1.0], survived=20))
    assert result.response.startswith('{"key_steps": [') and result.error == ""
    assert all(a.value in (-0.2, -0.1, 0.1, 0.2) for a in result.adjustments)


def test_choice_format_asks_which_step_then_which_adjustment(chat_server):
    # the server answers "B" (the second decision shown), then "A" (-2K)
    chat_server.script = [
        ("json", 200, ChatServer.reply("B", top_logprobs={"B": -0.1, "A": -2.5})),
        ("json", 200, ChatServer.reply("A", top_logprobs={"A": -0.3, "D": -1.9})),
    ]
    backend = OpenAICompatBackend(chat_server.url, "critic", max_retries=0)
    critic = ValueCritic(backend, lambda index: f"action {index}", CriticConfig(k=K))
    result = critic.criticise(_trajectory(1, [0.0, -1.0, 0.2], survived=25))
    assert [(a.step, a.value) for a in result.adjustments] == [(10, -0.2)]
    assert result.calls == 2 and result.error == "" and result.refused == []
    assert result.response == "step 10: -2K" and "log p -0.10" in result.adjustments[0].rationale
    first, second = (r["messages"] for r in chat_server.requests)
    assert "A) step 0: max load 95%, action: action 0" in first[1]["content"]
    assert "blackout at step 25" in first[1]["content"]
    assert second[2] == {"role": "assistant", "content": "B"}
    assert "reward of step 10 (action 0)" in second[3]["content"] and "A) -2K" in second[3]["content"]


def test_choice_format_never_picks_a_step_twice_and_respects_the_budget(tiny_long_model_dir):
    from ace_core.llm.local import LocalBackend

    backend = LocalBackend(tiny_long_model_dir, threads=1)
    critic = ValueCritic(backend, str, CriticConfig(k=K, choice_key_steps=3))
    trajectory = _trajectory(1, [0.0, -1.0, 0.3, -0.6], survived=40)
    result = critic.criticise(trajectory)
    assert result.calls == 6 and len(result.adjustments) == 3
    assert len({a.step for a in result.adjustments}) == 3
    assert {a.step for a in result.adjustments} <= {d.step for d in trajectory.decisions}
    assert all(a.value in (-0.2, -0.1, 0.1, 0.2) for a in result.adjustments)
    limited = critic.criticise(trajectory, budget=3)  # room for one key step only
    assert limited.calls == 2 and len(limited.adjustments) == 1


def test_choice_format_keeps_finished_key_steps_when_the_server_dies(chat_server):
    chat_server.script = [
        ("json", 200, ChatServer.reply("A", top_logprobs={"A": -0.1})),
        ("json", 200, ChatServer.reply("C", top_logprobs={"C": -0.1})),
        ("json", 500, {"error": {"message": "boom"}}),
    ]
    backend = OpenAICompatBackend(chat_server.url, "critic", max_retries=0)
    critic = ValueCritic(backend, str, CriticConfig(k=K, choice_key_steps=2))
    result = critic.criticise(_trajectory(1, [0.0, -1.0], survived=20))
    assert [(a.step, a.value) for a in result.adjustments] == [(0, 0.1)]
    assert result.calls == 3 and "LLMError" in result.error


def test_unknown_formats_are_refused():
    with pytest.raises(ConfigError, match="accepted: choice, json"):
        CriticConfig(format="yaml").validate()
