"""The Policy Actor against a real chat-completions server (scripted answers), the tiny local model
and the random control, on the sandbox grid: only simulation-validated improvements are kept."""

import socket

import numpy as np
import pytest

from ace_core.llm.actor import ActorConfig, Decision, PolicyActor, RandomChooser
from ace_core.llm.local import LocalBackend
from ace_core.llm.openai_compat import OpenAICompatBackend
from ace_core.llm.prompts import LABELS
from ace_core.rl.buffer import SOURCE_LLM
from tests.ace_core.conftest import ChatServer

# for the tests that script or read letter answers; text answers (the default) have their own tests
LETTERS = ActorConfig(answer="letter")


def _decision(obs, space, features, action: int) -> Decision:
    return Decision(10, 0, obs, features(obs), space.top_mask(obs), action, step_reward=-0.5)


@pytest.fixture(scope="module")
def case(sandbox, sandbox_space, sandbox_features):
    """An observation where doing nothing (the RL action) has both worse and strictly better candidates."""
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    probe = PolicyActor(RandomChooser(0), sandbox_space, sandbox.action_space, sandbox_features)
    for _ in range(20):
        decision = _decision(obs, sandbox_space, sandbox_features, 0)
        rl = probe.simulate(obs, 0)
        options = probe.candidates(decision)
        better = [i for i in options if (o := probe.simulate(obs, i)).valid and o.reward > rl.reward]
        worse = [i for i in options if i not in better]
        if len(worse) >= 2 and better:
            return decision, rl, options, better, worse
        obs, *_ = sandbox.step(sandbox.action_space({}))
    pytest.fail("no observation with both worse and better candidates on the sandbox")


def _server_backend(server: ChatServer, **options) -> OpenAICompatBackend:
    return OpenAICompatBackend(server.url, "scripted", max_retries=0, logprobs=False, **options)


def _letter(options: list[int], index: int) -> str:
    return LABELS[options.index(index)]


def _shown(decision: Decision, refinement_id: str, step: int, sandbox, space, features) -> list[int]:
    """The options as a refinement with this id and step lists them (shuffled)."""
    return PolicyActor(RandomChooser(0), space, sandbox.action_space, features).shortlist(
        decision, refinement_id, step
    )


def test_only_a_simulation_validated_improvement_is_accepted_after_feedback(
    case, chat_server, sandbox, sandbox_space, sandbox_features
):
    decision, rl, options, better, worse = case
    shown = _shown(decision, "r00001", 10, sandbox, sandbox_space, sandbox_features)
    remaining = [i for i in shown if i != worse[0]]
    chat_server.script = [
        ("json", 200, ChatServer.reply(_letter(shown, worse[0]))),
        ("json", 200, ChatServer.reply(_letter(remaining, better[0]) + ".")),
    ]
    actor = PolicyActor(
        _server_backend(chat_server), sandbox_space, sandbox.action_space, sandbox_features, LETTERS
    )
    refinement = actor.refine(decision, "r00001", step=10, max_calls=10)

    event = refinement.event
    assert refinement.options == shown
    assert event.accepted_by_simulation and refinement.calls == 2 and event.reason == ""
    first, second = event.rounds
    assert first.action_index == worse[0] and not first.accepted
    assert first.simulated_reward is None or first.simulated_reward <= rl.reward
    assert second.action_index == better[0] and second.accepted and second.simulated_reward > rl.reward
    assert event.llm_action_index == better[0] and event.llm_reward > event.rl_reward == rl.reward
    assert event.rl_action_index == decision.action and event.model == "scripted"
    assert "The RL agent chose" in first.prompt and "not better than the RL action" in second.prompt
    # the retry lists the options without the one already tried
    retry = chat_server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": _letter(shown, worse[0])}
    assert (
        sandbox_space.describe(worse[0]) + ")" not in retry[-1]["content"].split("Choose another option:")[1]
    )
    # the transition for the LLM buffer is the validated one-step outcome
    t = refinement.transition
    assert t.action == better[0] and t.reward > refinement.rl_reward == rl.reward
    assert t.source == SOURCE_LLM and t.step_reward == t.reward and not t.done
    assert np.array_equal(t.obs, decision.features) and t.next_obs.shape == decision.features.shape
    # the fine-tuning sample answers the round-1 prompt with the letter of the option simulation
    # shows best among the whole shortlist (not necessarily the one the LLM picked), in the order shown
    messages, answer = refinement.sample
    rewards = [o.reward if o.valid else -np.inf for o in (actor.simulate(decision.obs, i) for i in options)]
    assert messages == chat_server.requests[0]["messages"]
    assert shown[LABELS.index(answer)] == options[int(np.argmax(rewards))]
    assert max(rewards) >= event.llm_reward


def test_retries_stop_after_the_configured_rounds_when_nothing_is_better(
    chat_server, sandbox, sandbox_space, sandbox_features
):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    probe = PolicyActor(RandomChooser(0), sandbox_space, sandbox.action_space, sandbox_features)
    options = probe.candidates(_decision(obs, sandbox_space, sandbox_features, 0)) + [0]

    def value(index: int) -> float:
        outcome = probe.simulate(obs, index)
        return outcome.reward if outcome.valid else -9.0

    best = max(options, key=value)
    decision = _decision(obs, sandbox_space, sandbox_features, best)
    chat_server.script = [("json", 200, ChatServer.reply("A"))] * 5
    actor = PolicyActor(
        _server_backend(chat_server), sandbox_space, sandbox.action_space, sandbox_features, LETTERS
    )
    refinement = actor.refine(decision, "r1", step=1, max_calls=50)
    assert not refinement.accepted and refinement.calls == 5 == len(refinement.event.rounds)
    assert len({r.action_index for r in refinement.event.rounds}) == 5  # never the same option twice
    assert refinement.event.reason == "no option was better than the RL action in simulation"
    assert refinement.transition is None and refinement.sample is None
    assert len(chat_server.requests) == 5


def test_garbage_answers_are_recorded_and_the_rl_action_stands(
    case, chat_server, sandbox, sandbox_space, sandbox_features
):
    decision, *_ = case
    chat_server.script = [("json", 200, ChatServer.reply("Rather split substation 5"))] * 3
    actor = PolicyActor(
        _server_backend(chat_server), sandbox_space, sandbox.action_space, sandbox_features, LETTERS
    )
    refinement = actor.refine(decision, "r2", step=1, max_calls=50)
    assert not refinement.accepted and refinement.transition is None
    assert len(refinement.event.rounds) == 2  # two errors in a row end the refinement
    assert all("none of the labels" in r.error and r.action_index is None for r in refinement.event.rounds)
    assert refinement.event.reason.startswith("LLM error")


def test_a_dead_server_is_recorded_quickly(case, sandbox, sandbox_space, sandbox_features):
    decision, *_ = case
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAICompatBackend(f"http://127.0.0.1:{port}/v1", "gone", max_retries=0, timeout=2.0)
    actor = PolicyActor(backend, sandbox_space, sandbox.action_space, sandbox_features)
    refinement = actor.refine(decision, "r3", step=1, max_calls=50)
    assert not refinement.accepted and len(refinement.event.rounds) == 2
    assert "LLMError" in refinement.event.rounds[0].error and "LLM error" in refinement.event.reason


def test_a_timeout_costs_one_round_and_the_next_answer_still_counts(
    case, chat_server, sandbox, sandbox_space, sandbox_features
):
    decision, rl, options, better, worse = case
    shown = _shown(decision, "r4", 1, sandbox, sandbox_space, sandbox_features)
    chat_server.script = [
        ("sleep", 5.0),
        ("json", 200, ChatServer.reply("A")),
        ("json", 200, ChatServer.reply(_letter(shown, better[0]))),
    ]
    actor = PolicyActor(
        _server_backend(chat_server, timeout=0.3),
        sandbox_space,
        sandbox.action_space,
        sandbox_features,
        LETTERS,
    )
    refinement = actor.refine(decision, "r4", step=1, max_calls=50)
    timed_out, answered = refinement.event.rounds
    assert "LLMError" in timed_out.error and timed_out.seconds < 4.0  # timed out, not answered late
    assert answered.accepted and refinement.accepted


def test_the_call_budget_caps_the_rounds(case, chat_server, sandbox, sandbox_space, sandbox_features):
    decision, rl, options, better, worse = case
    shown = _shown(decision, "r5", 1, sandbox, sandbox_space, sandbox_features)
    chat_server.script = [("json", 200, ChatServer.reply(_letter(shown, worse[0])))]
    actor = PolicyActor(
        _server_backend(chat_server), sandbox_space, sandbox.action_space, sandbox_features, LETTERS
    )
    refinement = actor.refine(decision, "r5", step=1, max_calls=1)
    assert refinement.calls == 1 and not refinement.accepted
    assert refinement.event.reason == "LLM call budget exhausted"


def test_random_control_uses_the_same_candidates_and_gate(case, sandbox, sandbox_space, sandbox_features):
    decision, rl, options, better, worse = case
    actor = PolicyActor(RandomChooser(3), sandbox_space, sandbox.action_space, sandbox_features)
    outcomes = [actor.refine(decision, f"x{i}", 1, 50) for i in range(6)]
    for refinement in outcomes:
        assert all(r.action_index in options for r in refinement.event.rounds)
        assert refinement.accepted == any(r.accepted for r in refinement.event.rounds)
        if refinement.accepted:
            assert refinement.event.llm_action_index in better and refinement.event.model == "random"


def test_the_shortlist_order_is_shuffled_per_refinement_and_reproducible(
    case, sandbox, sandbox_space, sandbox_features
):
    decision, rl, options, better, worse = case
    actor = PolicyActor(RandomChooser(0), sandbox_space, sandbox.action_space, sandbox_features)
    orders = [actor.shortlist(decision, f"r{i:05d}", 10) for i in range(20)]
    # the same actions under other letters
    assert all(sorted(order) == sorted(options) for order in orders)
    assert len({tuple(order) for order in orders}) > 10
    # where the fixed order's first option lands varies: no letter stands for a kind of move
    assert len({order.index(options[0]) for order in orders}) >= 4
    # reproducible from the refinement id and step, and drawn afresh for another step
    assert actor.shortlist(decision, "r00003", 10) == orders[3]
    assert actor.shortlist(decision, "r00003", 11) != orders[3]
    assert actor.refine(decision, "r00003", 10, 1).options == orders[3]


def test_the_fine_tuning_label_names_the_same_action_whatever_the_order(
    case, sandbox, sandbox_space, sandbox_features
):
    decision, rl, options, better, worse = case
    actor = PolicyActor(RandomChooser(0), sandbox_space, sandbox.action_space, sandbox_features, LETTERS)
    labelled = []
    for refinement_id in ("a", "b", "c"):
        shown = actor.shortlist(decision, refinement_id, 0)
        messages = actor.first_prompt(decision, shown, rl)
        _, answer = actor.labelled_sample(decision, messages, shown, rl.reward)
        # the prompt lists the options in the shuffled order its answer refers to
        assert f"{answer}) {sandbox_space.describe(shown[LABELS.index(answer)])}" in messages[-1]["content"]
        labelled.append((answer, shown[LABELS.index(answer)]))
    assert len({action for _, action in labelled}) == 1 and labelled[0][1] in better
    assert len({answer for answer, _ in labelled}) > 1


def test_policy_top_k_comes_first_and_the_rl_action_is_never_offered(
    case, sandbox, sandbox_space, sandbox_features
):
    decision, *_ = case
    legal = np.flatnonzero(sandbox_space.action_mask(decision.obs))
    favourites = [decision.action, int(legal[-1]), int(legal[-2]), int(legal[-3])]
    actor = PolicyActor(
        RandomChooser(0),
        sandbox_space,
        sandbox.action_space,
        sandbox_features,
        ActorConfig(candidates=5, policy_top_k=2),
        policy_top_k=lambda features, mask, k: favourites[:k],
    )
    options = actor.candidates(decision)
    assert options[:2] == favourites[1:3] and decision.action not in options and len(options) == 5


def test_the_tiny_local_model_runs_the_whole_loop(
    tiny_long_model_dir, case, sandbox, sandbox_space, sandbox_features
):
    decision, rl, *_ = case
    backend = LocalBackend(tiny_long_model_dir, threads=1)
    actor = PolicyActor(backend, sandbox_space, sandbox.action_space, sandbox_features, LETTERS)
    refinement = actor.refine(decision, "r6", step=1, max_calls=50)
    assert refinement.event.rounds and all(
        r.error == "" or "illegal" in r.error or "game over" in r.error for r in refinement.event.rounds
    )
    assert all("(scores: A " in r.response for r in refinement.event.rounds)
    for r in refinement.event.rounds:
        assert r.accepted == (r.simulated_max_rho is not None and r.simulated_reward > rl.reward)


def test_text_answers_name_the_action_itself(case, chat_server, sandbox, sandbox_space, sandbox_features):
    decision, rl, options, better, worse = case
    config = ActorConfig(answer="text")
    actor = PolicyActor(
        _server_backend(chat_server), sandbox_space, sandbox.action_space, sandbox_features, config
    )
    shown = actor.shortlist(decision, "r00009", 3)
    # a server copies the text of a worse option (without the full stop), then a better one
    chat_server.script = [
        ("json", 200, ChatServer.reply(sandbox_space.describe(worse[0]))),
        ("json", 200, ChatServer.reply(f'"{sandbox_space.describe(better[0])}."')),
    ]
    refinement = actor.refine(decision, "r00009", step=3, max_calls=10)
    first, second = refinement.event.rounds
    assert (first.action_index, second.action_index) == (worse[0], better[0]) and second.accepted
    prompt = chat_server.requests[0]["messages"][-1]["content"]
    assert f"- {sandbox_space.describe(shown[0])}\n" in prompt and "A) " not in prompt
    assert "copying that option's text" in prompt
    retry = chat_server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": sandbox_space.describe(worse[0]) + "."}
    # the fine-tuning answer is the best option's text, whatever the order it was listed in
    _, answer = refinement.sample
    rewards = [o.reward if o.valid else -np.inf for o in (actor.simulate(decision.obs, i) for i in shown)]
    assert answer == sandbox_space.describe(shown[int(np.argmax(rewards))]) + "."


def test_the_tiny_local_model_scores_option_texts(
    tiny_long_model_dir, case, sandbox, sandbox_space, sandbox_features
):
    decision, *_ = case
    backend = LocalBackend(tiny_long_model_dir, threads=1)
    config = ActorConfig(answer="text", rounds=1)
    actor = PolicyActor(backend, sandbox_space, sandbox.action_space, sandbox_features, config)
    refinement = actor.refine(decision, "r7", step=1, max_calls=1)
    (round_,) = refinement.event.rounds
    texts = [sandbox_space.describe(i) for i in refinement.options]
    assert round_.action_index in refinement.options
    assert round_.response.startswith(sandbox_space.describe(round_.action_index) + ". (scores: ")
    assert all(f"{text}. " in round_.response for text in texts)
