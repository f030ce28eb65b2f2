"""Contextual calibration of the actor's choice (Zhao et al. 2021) and simulation-labelled samples,
with the tiny local model and real simulations on the sandbox grid (no mocks)."""

import numpy as np

from ace_core.llm import prompts
from ace_core.llm.actor import ActorConfig, Decision, PolicyActor, RandomChooser
from ace_core.llm.local import LocalBackend


def _actor(chooser, sandbox, space, features, **config) -> PolicyActor:
    return PolicyActor(
        chooser, space, sandbox.action_space, features, ActorConfig(**{"answer": "letter", **config})
    )


def _bad_case(sandbox, space, features) -> Decision:
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    return Decision(10, 0, obs, features(obs), space.top_mask(obs), 0, step_reward=-0.5)


def test_content_free_prompts_keep_the_format_and_drop_the_content():
    real = prompts.actor_messages("line 4 at 112%", "do nothing", 0.1, 0.9, ["split 5", "split 12"])
    blank = prompts.content_free_actor_messages(2)
    assert [m["role"] for m in blank] == [m["role"] for m in real]
    assert "A) N/A\nB) N/A\n" in blank[1]["content"] and "split" not in blank[1]["content"]
    assert "112%" not in blank[1]["content"] and blank[0] == real[0]
    assert prompts.content_free_feedback(3)["content"].count("N/A") == 6


def test_calibrated_choice_subtracts_the_content_free_scores(
    tiny_long_model_dir, sandbox, sandbox_space, sandbox_features
):
    backend = LocalBackend(tiny_long_model_dir, threads=1)
    actor = _actor(backend, sandbox, sandbox_space, sandbox_features, calibrate=True)
    messages = prompts.actor_messages(
        "line 4 at 112%", "do nothing", 0.1, 0.9, ["split 5", "split 12", "reconnect 7"]
    )
    blank = prompts.content_free_actor_messages(3)
    labels = ["A", "B", "C"]

    choice, raw, baseline = actor.choose(messages, blank, labels)

    assert raw == backend.choose(messages, labels)[1]
    assert baseline == backend.choose(blank, labels)[1]
    assert baseline != raw and 0 <= choice < 3
    assert choice == int(np.argmax(np.subtract(raw, baseline)))
    # cached per content-free prompt, model and adapter: a second choice does not recompute it
    assert len(actor._content_free) == 1
    actor.choose(messages, blank, labels)
    assert len(actor._content_free) == 1

    raw_actor = _actor(backend, sandbox, sandbox_space, sandbox_features, calibrate=False)
    raw_choice, raw_again, none = raw_actor.choose(messages, blank, labels)
    assert none is None and raw_again == raw and raw_choice == int(np.argmax(raw))


def test_refinements_record_both_scores_and_the_random_control_is_not_calibrated(
    tiny_long_model_dir, sandbox, sandbox_space, sandbox_features
):
    decision = _bad_case(sandbox, sandbox_space, sandbox_features)
    backend = LocalBackend(tiny_long_model_dir, threads=1)
    refinement = _actor(
        backend, sandbox, sandbox_space, sandbox_features, rounds=2, candidates=4, calibrate=True
    ).refine(decision, "r1", step=1, max_calls=2)
    assert refinement.scores and all(baseline is not None for _, baseline in refinement.scores)
    assert "content-free: A " in refinement.event.rounds[0].response

    control = _actor(
        RandomChooser(0), sandbox, sandbox_space, sandbox_features, rounds=2, candidates=4, calibrate=True
    )
    refinement = control.refine(decision, "r2", step=1, max_calls=2)
    assert all(baseline is None for _, baseline in refinement.scores)


def test_the_fine_tuning_label_is_the_best_simulated_option(sandbox, sandbox_space, sandbox_features):
    decision = _bad_case(sandbox, sandbox_space, sandbox_features)
    actor = _actor(RandomChooser(0), sandbox, sandbox_space, sandbox_features, candidates=8)
    options = actor.candidates(decision)
    rl = actor.simulate(decision.obs, decision.action)
    one_by_one = [actor.simulate(decision.obs, i) for i in options]
    rewards = [o.reward if o.valid else -np.inf for o in one_by_one]
    assert [o.reward for o in actor.simulate_options(decision.obs, options)] == [o.reward for o in one_by_one]

    sample = actor.labelled_sample(decision, actor.first_prompt(decision, options, rl), options, rl.reward)
    if max(rewards) > rl.reward:
        assert sample[1] == prompts.LABELS[int(np.argmax(rewards))]
    else:
        assert sample is None
    # nothing beats an impossibly good RL reward: no label to teach
    assert actor.labelled_sample(decision, [], options, rl_reward=2.0) is None
