"""The LLM as Policy Actor (f_LLM): re-think a low-reward decision, keep only what simulation proves.

For one past decision (its grid2op observation kept, see :mod:`ace_core.grid.snapshot`):

1. simulate the RL action from that observation: the outcome to beat (``r_rl``, max rho);
2. shortlist candidates: the policy's top-k, then legal line reconnections, then every legal
   topology at the substations at the ends of the most loaded lines (:func:`near_loaded_lines`,
   round-robin over the substations in order of loading), without the RL action nor topologies
   that would leave their substation unchanged; then **shuffled** (:meth:`PolicyActor.shortlist`);
3. up to ``rounds`` times: the chooser picks a letter (or, with ``answer="text"``, scores the
   options' own texts as answers), the action is simulated one step ahead and
   accepted if its simulated reward is **strictly** better than the RL action's; otherwise the
   outcome is fed back, the tried option leaves the list, and the chooser tries again.

**Calibration** (``ActorConfig.calibrate``, off by default; Zhao et al. 2021, "Calibrate Before
Use"): a small model scoring option letters mostly says "A" whatever the options are. So the same
letters are also scored after a *content-free* prompt (the same conversation with the state, the
actions and the numbers replaced by "N/A", cached per conversation shape, model and adapter), and
the choice is ``argmax_l log p(l | prompt) - log p(l | content-free prompt)``: the letter the real content makes
more likely than the model's prior for it.

**Fine-tuning samples**: an accepted refinement yields (round-1 prompt -> letter of the option
that simulation shows best among the whole shortlist), so a LoRA round teaches what simulation
found, not the model's own first pick (:meth:`PolicyActor.labelled_sample`).

Everything is recorded in a :class:`~ace_core.events.RefinementEvent` (one
:class:`~ace_core.events.RoundRecord` per round: prompt, response, parsed action, simulated reward
and max rho, accepted, error, seconds). An LLM error (timeout, dead server, garbage, an index
outside the list) is recorded and the round is lost; two in a row end the refinement: the RL action
stands. Nothing here raises on the LLM's behalf.

:class:`RandomChooser` replaces the LLM by a uniform pick among the same candidates, with the same
simulation gate: the control that measures what the LLM adds over validated random search.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable

import numpy as np

from ace_core.config.sections import ActorConfig
from ace_core.events import RefinementEvent, RoundRecord
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import is_disguised_noop, near_loaded_lines
from ace_core.grid.contingency import screen_actions
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.simulate import (
    Simulated,
    simulate_many,
)
from ace_core.grid.text import action_text, state_text
from ace_core.llm import prompts
from ace_core.llm.backend import NOT_SCORED
from ace_core.llm.lora import Sample
from ace_core.llm.refinement import (
    Chooser,
    Decision,
    Outcome,
    Progress,
    RandomChooser,  # noqa: F401 - the random control, imported from here by callers
    Refinement,
    adapter_number,
    finite,
    outcome_of,
)
from ace_core.rl.buffer import SOURCE_LLM, Transition

MAX_CONSECUTIVE_ERRORS = 2
"""LLM errors in a row that end a refinement (a dead server should not cost five timeouts)."""


class PolicyActor:
    """Refines past decisions with a chooser (LLM or random), keeping what simulation validates.

    The shortlist is listed in a **shuffled** order, drawn from the refinement id and step
    (:meth:`shortlist`): built in a fixed order (reconnections, then topologies at the ends of the
    most loaded lines, which are the same lines day after day), the letter alone predicted the
    winner, and one LoRA round taught a position ("always C") instead of the grid (docs/ace.md).
    The order is reproducible (same id and step, same order; nothing to checkpoint), the same in the
    prompt and in the fine-tuning sample built from it, and leaves the actions themselves unchanged.
    """

    def __init__(
        self,
        chooser: Chooser,
        space: ActionSpace,
        g2op_space,
        features: FeatureBuilder,
        config: ActorConfig | None = None,
        gamma: float = 0.99,
        policy_top_k: Callable[[np.ndarray, np.ndarray, int], list[int]] | None = None,
    ) -> None:
        self.chooser = chooser
        self.space = space
        self.g2op_space = g2op_space
        self.features = features
        self.config = config or ActorConfig()
        self.gamma = gamma
        self.policy_top_k = policy_top_k
        self._content_free: dict[tuple, list[float]] = {}

    # ----- pieces -----
    def simulate(self, obs, index: int) -> Outcome:
        """The action's simulated reward and max rho one step ahead (grid2op's ``obs.simulate``)."""
        sim_obs, reward, done, info = obs.simulate(self.space.to_grid2op(index, self.g2op_space))
        outcome = outcome_of(Simulated(sim_obs.rho, float(reward), bool(done), info))
        if outcome.valid:
            outcome.next_features = self.features(sim_obs)
            outcome.next_mask = self.space.top_mask(sim_obs)
        return outcome

    def n1_words(self, decision: Decision, llm_index: int | None) -> tuple[str, str]:
        """The N-1 worst case, in words, of the grids the RL and the LLM actions lead to (what a
        reviewer weighs beside the one-step outcome); empty for no action or a failed simulation."""
        indices = [int(decision.action)] + ([int(llm_index)] if llm_index is not None else [])
        screens = screen_actions(decision.obs, [self.space.to_grid2op(i, self.g2op_space) for i in indices])
        words = [s.words if s is not None else "" for s in screens]
        return words[0], (words[1] if len(words) > 1 else "")

    def simulate_options(self, obs, indices: list[int]) -> list[Outcome]:
        """Reward and max rho of each action one step ahead (no next state): one shared simulator."""
        actions = [self.space.to_grid2op(i, self.g2op_space) for i in indices]
        return [outcome_of(s) for s in simulate_many(obs, actions)]

    def first_prompt(self, decision: Decision, options: list[int], rl: Outcome) -> list[dict]:
        """The round-1 prompt for ``options`` (``rl``: the RL action's simulated outcome)."""
        return prompts.actor_messages(
            state_text(decision.obs, self.space),
            action_text(self.space, decision.action),
            rl.reward,
            rl.max_rho,
            _texts(self.space, options),
            self.config.answer,
        )

    def labels(self, options: list[int]) -> list[str]:
        """What the chooser scores for ``options``: letters, or the options' texts."""
        return prompts.answer_labels(_texts(self.space, options), self.config.answer)

    def labelled_sample(
        self, decision: Decision, messages: list[dict], options: list[int], rl_reward: float
    ) -> Sample | None:
        """(round-1 prompt, label of the shortlist's best simulated option), or None when no option
        beats the RL action: the fine-tuning label is what simulation found best, not the LLM's pick."""
        outcomes = self.simulate_options(decision.obs, options)
        rewards = [o.reward if o.valid else -np.inf for o in outcomes]
        best = int(np.argmax(rewards))
        if not rewards[best] > rl_reward:
            return None
        return (messages, self.labels(options)[best])

    def candidates(self, decision: Decision) -> list[int]:
        """Policy top-k, then reconnections and topologies at the ends of the most loaded lines;
        legal, RL action and no-op topologies excluded."""
        legal = self.space.action_mask(decision.obs)
        seen = {int(decision.action)}
        shortlist: list[int] = []

        def take(indices, limit: int) -> None:
            for index in indices:
                if len(shortlist) >= limit:
                    return
                if index not in seen and legal[index] and not self.is_noop(decision.obs, index):
                    seen.add(int(index))
                    shortlist.append(int(index))

        if self.policy_top_k is not None and self.config.policy_top_k > 0:
            # one more than needed: the RL action itself is often the policy's first choice
            top = self.policy_top_k(decision.features, decision.mask, self.config.policy_top_k + 1)
            take(top, min(self.config.policy_top_k, self.config.candidates))
        take(near_loaded_lines(decision.obs, self.space, self.config.loaded_lines), self.config.candidates)
        return shortlist

    def shortlist(self, decision: Decision, refinement_id: str, step: int) -> list[int]:
        """:meth:`candidates` in a random order seeded by ``(refinement_id, step)``, so that no letter
        predicts the best option; the same id and step give the same order."""
        options = self.candidates(decision)
        rng = np.random.default_rng([zlib.crc32(refinement_id.encode()), step])
        return [options[i] for i in rng.permutation(len(options))]

    def is_noop(self, obs, index: int) -> bool:
        """True for a topology action that leaves its substation as it is (e.g. 'all to bus 1' on a
        substation already on one bus): it would only waste an option and a round."""
        return is_disguised_noop(obs, self.space, index)

    def choose(
        self, messages: list[dict], content_free: list[dict], labels: list[str]
    ) -> tuple[int, list[float], list[float] | None]:
        """(choice, raw scores, content-free scores or None); raises on a bad answer.

        With calibration, the choice is the argmax of raw minus content-free scores; labels a
        backend could not score (:data:`NOT_SCORED`) stay unscored.
        """
        choice, scores = self.chooser.choose(messages, labels)
        if isinstance(choice, bool) or not isinstance(choice, int | np.integer):
            raise ValueError(f"choice {choice!r} is not an integer")
        if not 0 <= choice < len(labels):
            raise ValueError(f"choice {choice} is outside the {len(labels)} listed options")
        by_letter_prior = self.config.calibrate and self.config.answer == "letter"
        if not (by_letter_prior and getattr(self.chooser, "scored", True)):
            return int(choice), list(scores), None
        baseline = self.content_free_scores(content_free, labels)
        calibrated = [
            s - b if s > NOT_SCORED and b > NOT_SCORED else NOT_SCORED for s, b in zip(scores, baseline)
        ]
        return int(np.argmax(calibrated)), list(scores), baseline

    def content_free_scores(self, content_free: list[dict], labels: list[str]) -> list[float]:
        """The labels' scores after the content-free prompt, cached per prompt, model and adapter."""
        key = (self.chooser.name, self.chooser.adapter_version, repr(content_free), tuple(labels))
        if key not in self._content_free:
            self._content_free[key] = list(self.chooser.choose(content_free, labels)[1])
        return self._content_free[key]

    # ----- the loop -----
    def refine(self, decision: Decision, refinement_id: str, step: int, max_calls: int) -> Refinement:
        """Up to ``rounds`` (and ``max_calls``) choose-simulate rounds; see the module docstring."""
        rl = self.simulate(decision.obs, decision.action)
        options = self.shortlist(decision, refinement_id, step)
        progress = Progress()
        if not options:
            progress.reason = "no legal candidate besides the RL action"
        else:
            self._rounds(decision, options, rl, max_calls, progress)
        llm_outcome = progress.accepted[1] if progress.accepted else None
        refinement = Refinement(
            self._event(decision, refinement_id, step, rl, progress),
            decision,
            progress.calls,
            llm_outcome,
            rl.reward,
            progress.sample,
            options=options,
            scores=progress.scores,
        )
        if progress.accepted:
            refinement.transition = self._transition(decision, *progress.accepted)
        return refinement

    def _rounds(
        self, decision: Decision, options: list[int], rl: Outcome, max_calls: int, progress: Progress
    ) -> None:
        """Ask, simulate, and retry with feedback on what the rejected option did."""
        first_messages = self.first_prompt(decision, options, rl)
        messages = list(first_messages)
        content_free = prompts.content_free_actor_messages(len(options))
        remaining = list(options)
        errors_in_row = 0
        for _ in range(self.config.rounds):
            if progress.calls >= max_calls:
                progress.reason = "LLM call budget exhausted"
                break
            labels = self.labels(remaining)
            prompt_text = messages[-1]["content"]
            started = time.perf_counter()
            progress.calls += 1
            try:
                choice, scores, baseline = self.choose(messages, content_free, labels)
            except Exception as error:  # noqa: BLE001 - whatever the LLM side does, training goes on
                errors_in_row += 1
                progress.failed(prompt_text, error, started)
                if errors_in_row >= MAX_CONSECUTIVE_ERRORS:
                    break
                continue
            errors_in_row = 0
            progress.scores.append((scores, baseline))
            index = remaining[choice]
            outcome = self.simulate(decision.obs, index)
            better = outcome.valid and outcome.reward > rl.reward
            progress.rounds.append(
                RoundRecord(
                    prompt=prompt_text,
                    response=_response_text(labels, choice, scores, baseline),
                    action_index=index,
                    simulated_reward=outcome.reward,
                    simulated_max_rho=outcome.max_rho,
                    accepted=better,
                    error=outcome.error,
                    seconds=time.perf_counter() - started,
                )
            )
            if better:
                progress.accepted = (index, outcome)
                progress.sample = self.labelled_sample(decision, first_messages, options, rl.reward)
                progress.reason = ""
                break
            progress.reason = "no option was better than the RL action in simulation"
            remaining.pop(choice)
            if not remaining:
                break
            answer = {"role": "assistant", "content": labels[choice]}
            messages = messages + [answer, self._feedback(index, outcome, rl, remaining)]
            content_free = content_free + [answer, prompts.content_free_feedback(len(remaining))]

    def _feedback(self, index: int, outcome: Outcome, rl: Outcome, remaining: list[int]) -> dict:
        return prompts.feedback_message(
            action_text(self.space, index),
            None if not outcome.valid else outcome.reward,
            outcome.max_rho,
            rl.reward,
            _texts(self.space, remaining),
            self.config.answer,
        )

    def _event(
        self, decision: Decision, refinement_id: str, step: int, rl: Outcome, progress: Progress
    ) -> RefinementEvent:
        """The record of a refinement: the accepted action, else the last one tried."""
        space, accepted = self.space, progress.accepted
        llm_index, llm_outcome = accepted if accepted else (None, None)
        last = progress.rounds[-1] if progress.rounds else None
        rl_n1, llm_n1 = self.n1_words(
            decision, llm_index if accepted else (last.action_index if last else None)
        )
        return RefinementEvent(
            step=step,
            refinement_id=refinement_id,
            state_text=state_text(decision.obs, space),
            rl_action_index=int(decision.action),
            rl_action_text=action_text(space, decision.action),
            rl_reward=rl.reward,
            rl_max_rho=finite(rl.max_rho),
            llm_action_index=llm_index if accepted else (last.action_index if last else None),
            llm_action_text=action_text(space, llm_index)
            if accepted
            else (action_text(space, last.action_index) if last and last.action_index is not None else ""),
            llm_reward=llm_outcome.reward if llm_outcome else (last.simulated_reward if last else None),
            llm_max_rho=llm_outcome.max_rho if llm_outcome else (last.simulated_max_rho if last else None),
            accepted_by_simulation=accepted is not None,
            rounds=tuple(progress.rounds),
            model=self.chooser.name,
            adapter_version=adapter_number(self.chooser.adapter_version),
            reason=progress.reason,
            rl_n1=rl_n1,
            llm_n1=llm_n1,
        )

    def _transition(self, decision: Decision, index: int, outcome: Outcome) -> Transition:
        """The validated one-step transition the LLM buffer stores."""
        return Transition(
            obs=decision.features,
            mask=decision.mask,
            action=int(index),
            reward=outcome.reward,
            next_obs=outcome.next_features,
            next_mask=outcome.next_mask,
            done=False,
            discount=self.gamma,
            step_reward=outcome.reward,
            source=SOURCE_LLM,
        )


def _texts(space: ActionSpace, indices: list[int]) -> list[str]:
    return [action_text(space, i) for i in indices]


def _response_text(labels: list[str], choice: int, scores: list[float], baseline: list[float] | None) -> str:
    scored = ", ".join(f"{label} {score:.2f}" for label, score in zip(labels, scores))
    if baseline is None:
        return f"{labels[choice]} (scores: {scored})"
    prior = ", ".join(f"{label} {score:.2f}" for label, score in zip(labels, baseline))
    return f"{labels[choice]} (scores: {scored}; content-free: {prior})"
