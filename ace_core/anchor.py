"""The expert anchor: behaviour cloning kept on during RL, so that SAC improves a cloned policy
instead of unlearning it.

Started from a clone, SAC explores with the clone *sampled*; those episodes end early, the critics
learn the values of bad play and the actor follows them back to doing nothing (the 14-bus
clone's validation survival fell from 0.83 to 0.73 within 3,000 decisions,
``docs/results-imitation.md``). With ``anchor > 0`` every actor update adds
``anchor * -log pi(a_expert | s)`` over a batch of the expert's mined decisions to the policy
loss (the behaviour-cloning regulariser of TD3+BC, Fujimoto & Gu 2021, on a discrete policy), so
the policy moves towards higher Q only as far as it keeps playing like the expert where the expert
was asked.

The decisions come from ``TrainConfig.anchor_mines()`` (``anchor_mine``, else the run's
``pretrain_mine``); they must share the run's action space and feature scale.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ace_core.grid.action_space import ActionSpace
from ace_core.imitation import top_masks
from ace_core.imitation_data import DatasetError, concat_datasets, load_dataset, same_scale


class AnchorBatch(NamedTuple):
    obs: torch.Tensor
    mask: torch.Tensor
    actions: torch.Tensor


class ExpertAnchor:
    """The expert's mined decisions as tensors, sampled uniformly for each actor update."""

    def __init__(self, features: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> None:
        self.features = torch.from_numpy(np.ascontiguousarray(features, dtype=np.float32))
        self.masks = torch.from_numpy(masks)
        self.actions = torch.from_numpy(actions.astype(np.int64))

    def __len__(self) -> int:
        return len(self.actions)

    @classmethod
    def load(cls, paths: list[str | Path], space: ActionSpace, load_scale: np.ndarray) -> ExpertAnchor:
        """The decisions of the mines at ``paths``, refused when their features are not the run's
        policy inputs (another feature scale)."""
        dataset = concat_datasets([(str(path), load_dataset(path, space)) for path in paths])
        if not same_scale(dataset.load_scale, load_scale):
            raise DatasetError(
                f"anchor mine {paths[0]} has another feature scale than the run's policy: its "
                "features are not this policy's inputs; anchor on the mine the policy was cloned from"
            )
        return cls(dataset.features, top_masks(space, dataset.legal()), dataset.actions)

    def sample(self, batch_size: int, rng: np.random.Generator) -> AnchorBatch:
        rows = torch.from_numpy(rng.integers(0, len(self), size=batch_size))
        return AnchorBatch(self.features[rows], self.masks[rows], self.actions[rows])
