"""The LLM as Policy Actor (f_LLM): re-think a low-reward decision, keep only what simulation proves.

For one past decision (its grid2op observation kept, see :mod:`ace_core.grid.snapshot`):

1. simulate the RL action from that observation: the outcome to beat (``r_rl``, max rho);
2. shortlist candidates: the policy's top-k, then topology actions at the substations around the
   most loaded lines (:func:`ace_core.agents.greedy_candidates`, round-robin over substations),
   legal, without the RL action nor topologies that would leave their substation unchanged;
3. up to ``rounds`` times: the chooser picks a letter, the action is simulated one step ahead and
   accepted if its simulated reward is **strictly** better than the RL action's; otherwise the
   outcome is fed back, the tried option leaves the list, and the chooser tries again.

Everything is recorded in a :class:`~ace_core.events.RefinementEvent` (one
:class:`~ace_core.events.RoundRecord` per round: prompt, response, parsed action, simulated reward
and max rho, accepted, error, seconds). An LLM error (timeout, dead server, garbage, an index
outside the list) is recorded and the round is lost; two in a row end the refinement: the RL action
stands. Nothing here raises on the LLM's behalf.

:class:`RandomChooser` replaces the LLM by a uniform pick among the same candidates, with the same
simulation gate: the control that measures what the LLM adds over validated random search.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ace_core.agents import greedy_candidates
from ace_core.events import RefinementEvent, RoundRecord
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.text import action_text, state_text
from ace_core.llm import prompts
from ace_core.llm.lora import Sample

MAX_CONSECUTIVE_ERRORS = 2
"""LLM errors in a row that end a refinement (a dead server should not cost five timeouts)."""


class Chooser(Protocol):
    """What the actor needs: an LLM backend, or :class:`RandomChooser`."""

    name: str
    adapter_version: str

    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]: ...


class RandomChooser:
    """Uniform pick among the listed labels: the control for 'what does the LLM add'."""

    name = "random"
    adapter_version = ""
    supports_finetuning = False

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 7])

    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]:
        return int(self.rng.integers(len(labels))), [0.0] * len(labels)


@dataclass
class ActorConfig:
    rounds: int = 5
    """think-simulate-retry rounds per refinement (the paper's five)"""
    candidates: int = 6
    """options listed to the LLM (letters A, B, ...)"""
    policy_top_k: int = 3
    """of which at most this many come from the policy's most likely actions"""
    greedy_budget: int = 24
    """topology actions considered around the most loaded lines (the rest of the options)"""


@dataclass
class Decision:
    """A past agent decision, with what re-simulating it needs."""

    step: int
    """environment step (in the run) of the decision"""
    episode: int
    obs: Any
    """the grid2op observation the agent acted on (a kept copy)"""
    features: np.ndarray
    mask: np.ndarray
    action: int
    step_reward: float
    """the reward of the step right after the decision (what selection compares with r_bar)"""


@dataclass
class Outcome:
    """One-step simulated result of an action."""

    reward: float
    max_rho: float | None
    """None when the simulation ended in a game over or the action was illegal"""
    done: bool
    error: str
    next_features: np.ndarray | None = None
    next_mask: np.ndarray | None = None

    @property
    def valid(self) -> bool:
        return not self.done and not self.error


@dataclass
class Refinement:
    """The result of refining one decision: the record, and the transition when accepted."""

    event: RefinementEvent
    decision: Decision
    calls: int
    """LLM (or random) choices made"""
    outcome: Outcome | None = None
    """the accepted action's simulated outcome"""
    rl_reward: float = 0.0
    sample: Sample | None = None
    """(round-1 prompt, letter of the accepted action in it): a fine-tuning sample"""
    transition: dict = field(default_factory=dict)
    """obs, mask, action, reward, next_obs, next_mask, done, discount, rl_reward for the LLM buffer"""

    @property
    def accepted(self) -> bool:
        return self.event.accepted_by_simulation


class PolicyActor:
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

    # ----- pieces -----
    def simulate(self, obs, index: int) -> Outcome:
        """The action's simulated reward and max rho one step ahead (grid2op's ``obs.simulate``)."""
        sim_obs, reward, done, info = obs.simulate(self.space.to_grid2op(index, self.g2op_space))
        if info.get("is_illegal"):
            return Outcome(float(reward), None, bool(done), "illegal action")
        if done:
            return Outcome(float(reward), None, True, "game over in simulation")
        if info.get("exception"):
            return Outcome(float(reward), None, bool(done), f"simulation error: {info['exception'][0]}")
        return Outcome(
            float(reward),
            float(np.max(sim_obs.rho)),
            False,
            "",
            self.features(sim_obs),
            self.space.top_mask(sim_obs),
        )

    def candidates(self, decision: Decision) -> list[int]:
        """Policy top-k, then topologies around the most loaded lines; legal, RL action excluded."""
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
        take(
            _interleaved(self.space, greedy_candidates(decision.obs, self.space, self.config.greedy_budget)),
            self.config.candidates,
        )
        return shortlist

    def is_noop(self, obs, index: int) -> bool:
        """True for a topology action that leaves its substation as it is (e.g. 'all to bus 1' on a
        substation already on one bus): it would only waste an option and a round."""
        if index < self.space.first_topology:
            return False
        sub, buses = self.space.bits_of(index)
        start = self.space.sub_start[sub]
        current = np.asarray(obs.topo_vect[start : start + len(buses)])
        connected = current > 0
        return bool(
            np.array_equal(buses[connected], current[connected])
            or np.array_equal(3 - buses[connected], current[connected])
        )

    # ----- the loop -----
    def refine(self, decision: Decision, refinement_id: str, step: int, max_calls: int) -> Refinement:
        """Up to ``rounds`` (and ``max_calls``) choose-simulate rounds; see the module docstring."""
        space = self.space
        rl = self.simulate(decision.obs, decision.action)
        state = state_text(decision.obs, space)
        rl_text = action_text(space, decision.action)
        options = self.candidates(decision)
        rounds: list[RoundRecord] = []
        calls, errors_in_row = 0, 0
        accepted: tuple[int, Outcome] | None = None
        sample: Sample | None = None
        reason = ""
        if not options:
            reason = "no legal candidate besides the RL action"
        else:
            first_messages = prompts.actor_messages(
                state, rl_text, rl.reward, rl.max_rho, _texts(space, options)
            )
            messages = list(first_messages)
            remaining = list(options)
            for _ in range(self.config.rounds):
                if calls >= max_calls:
                    reason = "LLM call budget exhausted"
                    break
                labels = list(prompts.LABELS[: len(remaining)])
                prompt_text = messages[-1]["content"]
                started = time.perf_counter()
                calls += 1
                try:
                    choice, scores = self.chooser.choose(messages, labels)
                    if isinstance(choice, bool) or not isinstance(choice, int | np.integer):
                        raise ValueError(f"choice {choice!r} is not an integer")
                    if not 0 <= choice < len(labels):
                        raise ValueError(f"choice {choice} is outside the {len(labels)} listed options")
                except Exception as error:  # noqa: BLE001 - whatever the LLM side does, training goes on
                    errors_in_row += 1
                    message = f"{type(error).__name__}: {error}"
                    rounds.append(
                        RoundRecord(
                            prompt=prompt_text,
                            response="",
                            action_index=None,
                            simulated_reward=None,
                            simulated_max_rho=None,
                            accepted=False,
                            error=message[:500],
                            seconds=time.perf_counter() - started,
                        )
                    )
                    reason = f"LLM error: {message[:200]}"
                    if errors_in_row >= MAX_CONSECUTIVE_ERRORS:
                        break
                    continue
                errors_in_row = 0
                index = remaining[choice]
                outcome = self.simulate(decision.obs, index)
                better = outcome.valid and outcome.reward > rl.reward
                rounds.append(
                    RoundRecord(
                        prompt=prompt_text,
                        response=_response_text(labels, choice, scores),
                        action_index=index,
                        simulated_reward=outcome.reward,
                        simulated_max_rho=outcome.max_rho,
                        accepted=better,
                        error=outcome.error,
                        seconds=time.perf_counter() - started,
                    )
                )
                if better:
                    accepted = (index, outcome)
                    sample = (first_messages, prompts.LABELS[options.index(index)])
                    reason = ""
                    break
                reason = "no option was better than the RL action in simulation"
                remaining.pop(choice)
                if not remaining:
                    break
                messages = messages + [
                    {"role": "assistant", "content": labels[choice]},
                    prompts.feedback_message(
                        action_text(space, index),
                        None if not outcome.valid else outcome.reward,
                        outcome.max_rho,
                        rl.reward,
                        _texts(space, remaining),
                    ),
                ]
        llm_index, llm_outcome = accepted if accepted else (None, None)
        last = rounds[-1] if rounds else None
        event = RefinementEvent(
            step=step,
            refinement_id=refinement_id,
            state_text=state,
            rl_action_index=int(decision.action),
            rl_action_text=rl_text,
            rl_reward=rl.reward,
            rl_max_rho=_finite(rl.max_rho),
            llm_action_index=llm_index if accepted else (last.action_index if last else None),
            llm_action_text=action_text(space, llm_index)
            if accepted
            else (action_text(space, last.action_index) if last and last.action_index is not None else ""),
            llm_reward=llm_outcome.reward if llm_outcome else (last.simulated_reward if last else None),
            llm_max_rho=llm_outcome.max_rho if llm_outcome else (last.simulated_max_rho if last else None),
            accepted_by_simulation=accepted is not None,
            rounds=tuple(rounds),
            model=self.chooser.name,
            adapter_version=adapter_number(self.chooser.adapter_version),
            reason=reason,
        )
        refinement = Refinement(event, decision, calls, llm_outcome, rl.reward, sample)
        if accepted:
            refinement.transition = {
                "obs": decision.features,
                "mask": decision.mask,
                "action": int(llm_index),
                "reward": llm_outcome.reward,
                "next_obs": llm_outcome.next_features,
                "next_mask": llm_outcome.next_mask,
                "done": False,
                "discount": self.gamma,
                "rl_reward": rl.reward,
            }
        return refinement


def adapter_number(version: str) -> int:
    """``adapter-0003`` -> 3; 0 when there is no adapter."""
    match = re.search(r"(\d+)$", version or "")
    return int(match.group(1)) if match else 0


def _interleaved(space: ActionSpace, indices: list[int]) -> list[int]:
    """Round-robin over the substations (and reconnections) so a short list covers several of them."""
    rank: dict[int, int] = {}
    keyed = []
    for order, index in enumerate(indices):
        group = int(space.top_of_action[index])
        keyed.append((rank.get(group, 0), order, index))
        rank[group] = rank.get(group, 0) + 1
    return [index for _, _, index in sorted(keyed)]


def _texts(space: ActionSpace, indices: list[int]) -> list[str]:
    return [action_text(space, i) for i in indices]


def _response_text(labels: list[str], choice: int, scores: list[float]) -> str:
    scored = ", ".join(f"{label} {score:.2f}" for label, score in zip(labels, scores))
    return f"{labels[choice]} (scores: {scored})"


def _finite(value: float | None) -> float:
    # -1 marks "no max rho" (game over or illegal): records go to JSON and Postgres, which refuse NaN
    return -1.0 if value is None else float(value)
