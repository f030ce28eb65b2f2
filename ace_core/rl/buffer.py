"""Replay buffer of agent decisions, with a typed sample (Stable-Baselines3 style).

One row is one *decision*: the agent acted at ``obs`` (legal top-level categories ``mask``), the
grid then ran, possibly for many steps below the rho threshold, until the next decision
(``next_obs``, ``next_mask``) or the episode's end. ``reward`` is the discounted sum of the
per-step rewards over those steps and ``discount`` is ``gamma ** steps`` (semi-MDP accounting),
so the TD target is ``reward + discount * (1 - done) * V(next_obs)``. ``step_reward`` is the
first step's reward alone (what one ``simulate`` of the action predicts; the LLM actor compares
against it). ``source`` is ``SOURCE_RL`` or ``SOURCE_LLM`` and ``weight`` multiplies the policy
loss (1 for RL rows; the mixed buffer's priority for LLM rows).

A decision enters as one :class:`Transition`; ``add`` returns its *row*, the number of decisions
the buffer had received before it. Rows keep counting past the capacity (the slot is ``row %
capacity``), so :meth:`ReplayBuffer.shape_reward` can tell a row still held from one already
overwritten by a newer decision, and refuse the latter.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ace_core.errors import AceError

SOURCE_RL = 0
SOURCE_LLM = 1


class RowOverwrittenError(AceError, LookupError):
    """A row that the replay buffer no longer holds (a newer decision took its slot)."""


class Transition(NamedTuple):
    """One decision, as stored: see the module docstring for what each reward means."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    reward: float
    next_obs: np.ndarray
    next_mask: np.ndarray
    done: bool
    discount: float
    step_reward: float
    source: int = SOURCE_RL
    weight: float = 1.0


class Batch(NamedTuple):
    obs: torch.Tensor
    mask: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    next_mask: torch.Tensor
    dones: torch.Tensor
    discounts: torch.Tensor
    weights: torch.Tensor
    sources: torch.Tensor


class ReplayBuffer:
    def __init__(self, capacity: int, obs_size: int, mask_size: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_size), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_size), dtype=np.float32)
        self.mask = np.zeros((capacity, mask_size), dtype=bool)
        self.next_mask = np.zeros((capacity, mask_size), dtype=bool)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.step_rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.discounts = np.zeros(capacity, dtype=np.float32)
        self.weights = np.ones(capacity, dtype=np.float32)
        self.sources = np.zeros(capacity, dtype=np.int8)
        self.pos = 0
        self.full = False
        self.added = 0
        """decisions received since the buffer was created (the next row)"""

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, t: Transition) -> int:
        """Store one decision; returns its row (see the module docstring)."""
        slot = self.pos
        self.obs[slot] = t.obs
        self.mask[slot] = t.mask
        self.actions[slot] = t.action
        self.rewards[slot] = t.reward
        self.next_obs[slot] = t.next_obs
        self.next_mask[slot] = t.next_mask
        self.dones[slot] = float(t.done)
        self.discounts[slot] = t.discount
        self.step_rewards[slot] = t.step_reward
        self.sources[slot] = t.source
        self.weights[slot] = t.weight
        self.pos = (self.pos + 1) % self.capacity
        self.full = self.full or self.pos == 0
        self.added += 1
        return self.added - 1

    def holds(self, row: int) -> bool:
        """Whether ``row`` (as ``add`` returned it) is still in the buffer."""
        return self.added - self.capacity <= row < self.added

    def shape_reward(self, row: int, delta: float) -> None:
        """Add ``delta`` to the stored reward of ``row``; refuses a row already overwritten."""
        if not self.holds(row):
            raise RowOverwrittenError(
                f"row {row} is not in the replay buffer; it holds rows "
                f"{max(0, self.added - self.capacity)} to {self.added - 1} (capacity {self.capacity})"
            )
        self.rewards[row % self.capacity] += delta

    def rows(self, rows: np.ndarray) -> Batch:
        as_tensor = torch.from_numpy
        return Batch(
            obs=as_tensor(self.obs[rows]),
            mask=as_tensor(self.mask[rows]),
            actions=as_tensor(self.actions[rows]),
            rewards=as_tensor(self.rewards[rows]),
            next_obs=as_tensor(self.next_obs[rows]),
            next_mask=as_tensor(self.next_mask[rows]),
            dones=as_tensor(self.dones[rows]),
            discounts=as_tensor(self.discounts[rows]),
            weights=as_tensor(self.weights[rows]),
            sources=as_tensor(self.sources[rows].astype(np.int64)),
        )

    def sample(self, batch_size: int, rng: np.random.Generator) -> Batch:
        return self.rows(rng.integers(0, len(self), size=batch_size))

    _ARRAYS = (
        "obs",
        "next_obs",
        "mask",
        "next_mask",
        "actions",
        "rewards",
        "step_rewards",
        "dones",
        "discounts",
        "weights",
        "sources",
    )

    def state_dict(self) -> dict:
        n = len(self)
        return {
            "capacity": self.capacity,
            "pos": self.pos,
            "full": self.full,
            "added": self.added,
            **{name: getattr(self, name)[:n].copy() for name in self._ARRAYS},
        }

    def load_state_dict(self, state: dict) -> None:
        if state["capacity"] != self.capacity:
            raise ValueError(f"buffer capacity {state['capacity']} in checkpoint, {self.capacity} configured")
        n = len(state["actions"])
        for name in self._ARRAYS:
            getattr(self, name)[:n] = state[name]
        self.pos, self.full = state["pos"], state["full"]
        # checkpoints written before rows were counted: the count is known up to whole wraps
        self.added = state.get("added", self.pos + (self.capacity if self.full else 0))


def concat_batches(first: Batch, second: Batch) -> Batch:
    return Batch(*(torch.cat([a, b]) for a, b in zip(first, second)))
