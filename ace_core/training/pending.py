"""A decision whose transition is still accumulating reward.

One stored transition spans a decision and every step up to the next decision or the episode's
end: its reward is the discounted sum of the per-step rewards over those steps and its discount
is ``gamma ** steps`` (see :mod:`ace_core.rl.buffer`). The trainer keeps the decision under way
as a :class:`Pending` until the next decision or the episode's end stores it; a checkpoint holds
it as a dict of its fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Pending:
    """A decision whose transition is still accumulating reward."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    reward: float = 0.0
    discount: float = 1.0
    step_reward: float | None = None
    episode_step: int = 0
    """step within the episode at which the decision was taken"""
    max_rho: float = 0.0
    """max rho when the decision was taken"""

    def add(self, reward: float, gamma: float) -> None:
        if self.step_reward is None:
            self.step_reward = reward
        self.reward += self.discount * reward
        self.discount *= gamma
