"""What refining one decision works with and produces: the chooser (an LLM backend or the random
control), the decision, simulated outcomes, the rounds' progress and the resulting refinement."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ace_core.events import RefinementEvent, RoundRecord
from ace_core.grid.outcome import Failure, failure, max_rho_after
from ace_core.grid.simulate import Simulated
from ace_core.llm.lora import Sample
from ace_core.rl.buffer import Transition


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
    scored = False
    """its scores carry no information: nothing to calibrate"""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 7])

    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]:
        return int(self.rng.integers(len(labels))), [0.0] * len(labels)


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
    """(round-1 prompt, letter of the shortlist's best simulated option): a fine-tuning sample"""
    transition: Transition | None = None
    """the validated one-step transition for the LLM buffer (None unless accepted); its RL
    counterpart's reward is ``rl_reward``"""
    options: list[int] = field(default_factory=list)
    """the shortlist of round 1, in the (shuffled) order of its letters"""
    scores: list[tuple[list[float], list[float] | None]] = field(default_factory=list)
    """per answered round: the raw label scores and the content-free ones (None: not calibrated)"""

    @property
    def accepted(self) -> bool:
        return self.event.accepted_by_simulation


@dataclass
class Progress:
    """What the rounds of one refinement have produced so far."""

    rounds: list[RoundRecord] = field(default_factory=list)
    scores: list[tuple[list[float], list[float] | None]] = field(default_factory=list)
    calls: int = 0
    accepted: tuple[int, Outcome] | None = None
    sample: Sample | None = None
    reason: str = ""

    def failed(self, prompt_text: str, error: Exception, started: float) -> None:
        message = f"{type(error).__name__}: {error}"
        self.rounds.append(
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
        self.reason = f"LLM error: {message[:200]}"


def outcome_of(simulated: Simulated) -> Outcome:
    rho, reward, done, info = simulated
    why = failure(simulated)
    if why is Failure.ILLEGAL:
        return Outcome(reward, None, done, "illegal action")
    if why is Failure.GRID_FAILS:
        return Outcome(reward, None, True, "game over in simulation")
    if why is Failure.SIMULATION_ERROR:
        return Outcome(reward, None, done, f"simulation error: {info['exception'][0]}")
    return Outcome(reward, max_rho_after(simulated), False, "")


def adapter_number(version: str) -> int:
    """``adapter-0003`` -> 3; 0 when there is no adapter."""
    match = re.search(r"(\d+)$", version or "")
    return int(match.group(1)) if match else 0


def finite(value: float | None) -> float:
    # -1 marks "no max rho" (game over or illegal): records go to JSON and Postgres, which refuse NaN
    return -1.0 if value is None else float(value)
