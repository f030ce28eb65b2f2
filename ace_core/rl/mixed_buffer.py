"""The mixed buffer D_mix of ACE: the agent's own decisions plus the LLM's validated refinements.

A batch of ``batch_size`` rows takes ``round(beta * batch_size)`` rows from the LLM buffer (when it
holds any) and the rest uniformly from the RL buffer. LLM rows are drawn with probability
proportional to their priority, the paper's eq. 8 with a validity indicator and a clip:

    w_i = min( exp((r_llm_i - r_rl_i) / T), w_max ) * 1[r_llm_i > r_rl_i]
    P(i) = w_i / sum_j w_j                       (over the rows of the LLM buffer)

where ``r_llm`` and ``r_rl`` are the one-step simulated rewards of the LLM's action and of the RL
action from the same observation, ``T`` the temperature and ``w_max`` keeps one lucky refinement
from taking over every batch. ``exp(r_llm / T) / exp(r_rl / T)`` is written as the exponential of
the difference so that it cannot overflow. The same ``w_i`` is the row's ``weights`` entry, which
the SAC update multiplies into the policy loss; RL rows have weight 1. Refinements that are not
strictly better have ``w = 0`` and are never stored (the actor only hands over accepted ones).

It has :class:`~ace_core.rl.buffer.ReplayBuffer`'s ``sample(batch_size, rng) -> Batch``, so the
SAC update takes it as it is.
"""

from __future__ import annotations

import math

import numpy as np

from ace_core.errors import ConfigError
from ace_core.rl.buffer import SOURCE_LLM, Batch, ReplayBuffer, Transition, concat_batches


def priority(r_llm: float, r_rl: float, temperature: float, max_weight: float) -> float:
    """``min(exp((r_llm - r_rl) / T), w_max) * 1[r_llm > r_rl]``: see the module docstring."""
    if not r_llm > r_rl:
        return 0.0
    return float(min(math.exp(min((r_llm - r_rl) / temperature, 700.0)), max_weight))


class MixedBuffer:
    """RL buffer + LLM buffer behind one ``sample``; ``len()`` is the RL buffer's (learning_starts
    counts the agent's own decisions)."""

    def __init__(
        self,
        rl: ReplayBuffer,
        llm: ReplayBuffer,
        beta: float,
        temperature: float = 0.1,
        max_weight: float = 10.0,
    ) -> None:
        if not 0.0 <= beta <= 1.0:
            raise ConfigError(f"beta={beta!r} is out of range; accepted: 0 to 1")
        if not temperature > 0.0:
            raise ConfigError(f"priority temperature={temperature!r} must be positive")
        if not max_weight >= 1.0:
            raise ConfigError(f"max_weight={max_weight!r} must be at least 1")
        self.rl, self.llm = rl, llm
        self.beta, self.temperature, self.max_weight = beta, temperature, max_weight

    def __len__(self) -> int:
        return len(self.rl)

    def add_refinement(self, transition: Transition, rl_reward: float) -> float:
        """Store a validated refinement in the LLM buffer; returns its priority (0: not stored).

        ``rl_reward`` is the one-step simulated reward of the RL action it refines."""
        weight = priority(transition.reward, rl_reward, self.temperature, self.max_weight)
        if weight > 0.0:
            self.llm.add(transition._replace(step_reward=transition.reward, source=SOURCE_LLM, weight=weight))
        return weight

    def llm_rows(self, batch_size: int) -> int:
        """How many rows of a batch come from the LLM buffer."""
        return int(round(self.beta * batch_size)) if len(self.llm) else 0

    def sample(self, batch_size: int, rng: np.random.Generator) -> Batch:
        n_llm = self.llm_rows(batch_size)
        rl_batch = self.rl.sample(batch_size - n_llm, rng)
        if n_llm == 0:
            return rl_batch
        weights = self.llm.weights[: len(self.llm)].astype(np.float64)
        rows = rng.choice(len(weights), size=n_llm, p=weights / weights.sum())
        return concat_batches(rl_batch, self.llm.rows(rows))

    def state_dict(self) -> dict:
        """The LLM buffer only: the trainer checkpoints the RL buffer under its own key."""
        return {"llm": self.llm.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.llm.load_state_dict(state["llm"])
