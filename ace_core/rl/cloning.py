"""The behaviour-cloning loss, ``-log pi(a_expert | s)``, with the expert's real actions weighted.

An expert that acts only when a simulation finds something better than waiting labels most of
the states it is asked about "do nothing" (84 % of the 14-bus three-day mine's decisions).
``action_weight`` W counts every decision whose action is not do-nothing W times; the loss is a
weighted mean, so its scale does not move with W, and W = 1 (the default) is the plain mean.
On the 14-bus three-day pipeline W = 6 did not change which test days are lost and validation
preferred 1 (``docs/results-imitation.md``).
"""

from __future__ import annotations

import torch

from ace_core.grid.action_space import DO_NOTHING


def cloning_loss(log_prob: torch.Tensor, actions: torch.Tensor, action_weight: float = 1.0) -> torch.Tensor:
    """Weighted mean of ``-log_prob`` over a batch; the rows whose ``actions`` are real count
    ``action_weight`` times."""
    if action_weight == 1.0:
        return -log_prob.mean()
    weights = torch.where(actions != DO_NOTHING, action_weight, 1.0).to(log_prob.dtype)
    return -(weights * log_prob).sum() / weights.sum()
