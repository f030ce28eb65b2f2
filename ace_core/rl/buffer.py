"""Replay buffer of agent decisions, with a typed sample (Stable-Baselines3 style).

One row is one *decision*: the agent acted at ``obs`` (legal top-level categories ``mask``), the
grid then ran, possibly for many steps below the rho threshold, until the next decision
(``next_obs``, ``next_mask``) or the episode's end. ``reward`` is the discounted sum of the
per-step rewards over those steps and ``discount`` is ``gamma ** steps`` (semi-MDP accounting),
so the TD target is ``reward + discount * (1 - done) * V(next_obs)``. ``step_reward`` is the
first step's reward alone (what one ``simulate`` of the action predicts; the LLM actor compares
against it). ``source`` is ``SOURCE_RL`` or ``SOURCE_LLM`` and ``weight`` multiplies the policy
loss (1 for RL rows; the mixed buffer's priority for LLM rows).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

SOURCE_RL = 0
SOURCE_LLM = 1


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

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(
        self,
        obs: np.ndarray,
        mask: np.ndarray,
        action: int,
        reward: float,
        next_obs: np.ndarray,
        next_mask: np.ndarray,
        done: bool,
        discount: float,
        step_reward: float,
        source: int = SOURCE_RL,
        weight: float = 1.0,
    ) -> int:
        """Store one decision; returns its row."""
        row = self.pos
        self.obs[row] = obs
        self.mask[row] = mask
        self.actions[row] = action
        self.rewards[row] = reward
        self.next_obs[row] = next_obs
        self.next_mask[row] = next_mask
        self.dones[row] = float(done)
        self.discounts[row] = discount
        self.step_rewards[row] = step_reward
        self.sources[row] = source
        self.weights[row] = weight
        self.pos = (self.pos + 1) % self.capacity
        self.full = self.full or self.pos == 0
        return row

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
            **{name: getattr(self, name)[:n].copy() for name in self._ARRAYS},
        }

    def load_state_dict(self, state: dict) -> None:
        if state["capacity"] != self.capacity:
            raise ValueError(f"buffer capacity {state['capacity']} in checkpoint, {self.capacity} configured")
        n = len(state["actions"])
        for name in self._ARRAYS:
            getattr(self, name)[:n] = state[name]
        self.pos, self.full = state["pos"], state["full"]


def concat_batches(first: Batch, second: Batch) -> Batch:
    return Batch(*(torch.cat([a, b]) for a, b in zip(first, second)))
