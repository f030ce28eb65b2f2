"""The behaviour-cloning loss, ``-log pi(a_expert | s)``, with the expert's real actions weighted.

An expert that acts only when it must labels most of the states it is asked about "do nothing"
(87 % of the 14-bus expert's mined decisions). Cloned as they come, a policy learns to wait, and
not when to stop waiting: on the 14-bus test day it loses, the plain policy does nothing through
four overloaded steps where the expert splits a substation (``docs/results-imitation.md``).
``action_weight`` W counts every decision whose action is not do-nothing W times; the loss is a
weighted mean, so its scale does not move with W, and W = 1 is the plain mean.
"""

from __future__ import annotations

import torch

DO_NOTHING = 0
"""index of doing nothing in the action space (:mod:`ace_core.grid.action_space`)"""


def cloning_loss(log_prob: torch.Tensor, actions: torch.Tensor, action_weight: float = 1.0) -> torch.Tensor:
    """Weighted mean of ``-log_prob`` over a batch; the rows whose ``actions`` are real count
    ``action_weight`` times."""
    if action_weight == 1.0:
        return -log_prob.mean()
    weights = torch.where(actions != DO_NOTHING, action_weight, 1.0).to(log_prob.dtype)
    return -(weights * log_prob).sum() / weights.sum()
