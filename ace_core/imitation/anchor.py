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
``pretrain_mine``); they must share the run's action space and feature scale. With
``teacher_anchor`` the expert teacher's own decisions during the run (:class:`DecisionLog`, kept by
:mod:`ace_core.training.teacher`) are sampled beside them: with the teacher set to the deployed check (the
policy's top k simulated, ``teacher_budget`` 0), the policy clones what the simulation chose among
its own candidates on the states the run reaches, so the check's improvement is distilled into the
plain policy (expert iteration, Anthony et al. 2017).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ace_core.grid.action_space import ActionSpace
from ace_core.imitation.cloning import top_masks
from ace_core.imitation.data import DatasetError, concat_datasets, load_dataset, same_features


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
    def load(
        cls, paths: list[str | Path], space: ActionSpace, features: dict, gen_pmax=None, labels: str = "all"
    ) -> ExpertAnchor:
        """The decisions of the mines at ``paths``, refused when their features are not the run's
        policy inputs (``features``: the policy's :meth:`FeatureBuilder.state_dict`). With
        continuous moves in ``space`` (a policy cloned with them), the mines' topology decisions are
        labelled with them (:meth:`~ace_core.imitation.data.Dataset.with_moves`: ``gen_pmax``, the
        grid's, and ``labels``)."""
        topology = space.with_moves(()) if space.moves else space
        dataset = concat_datasets([(str(path), load_dataset(path, topology)) for path in paths])
        if space.moves:
            dataset = dataset.with_moves(space, gen_pmax, labels)
        if not same_features(dataset.feature_state, features):
            raise DatasetError(
                f"anchor mine {paths[0]} has another feature scale or layout than the run's policy: "
                "its features are not this policy's inputs; anchor on the mine the policy was cloned from"
            )
        return cls(dataset.features, top_masks(space, dataset.legal()), dataset.actions)

    def sample(
        self, batch_size: int, rng: np.random.Generator, taught: DecisionLog | None = None
    ) -> AnchorBatch:
        """A batch drawn uniformly over the mined decisions and, if given, the ``taught`` ones."""
        extra = len(taught) if taught is not None else 0
        rows = torch.from_numpy(rng.integers(0, len(self) + extra, size=batch_size))
        mined = rows < len(self)
        if mined.all():
            return AnchorBatch(self.features[rows], self.masks[rows], self.actions[rows])
        ours, theirs = rows[mined], rows[~mined] - len(self)
        return AnchorBatch(
            torch.cat([self.features[ours], taught.features[theirs]]),
            torch.cat([self.masks[ours], taught.masks[theirs]]),
            torch.cat([self.actions[ours], taught.actions[theirs]]),
        )


class DecisionLog:
    """Decisions taken during a run (features, legal top-level mask, action), growing in place,
    saved with the checkpoint so a resume clones the same ones."""

    def __init__(self, feature_size: int, n_top: int, capacity: int = 1024) -> None:
        self._features = torch.zeros((capacity, feature_size), dtype=torch.float32)
        self._masks = torch.zeros((capacity, n_top), dtype=torch.bool)
        self._actions = torch.zeros(capacity, dtype=torch.int64)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    @property
    def features(self) -> torch.Tensor:
        return self._features[: self.size]

    @property
    def masks(self) -> torch.Tensor:
        return self._masks[: self.size]

    @property
    def actions(self) -> torch.Tensor:
        return self._actions[: self.size]

    def add(self, features: np.ndarray, mask: np.ndarray, action: int) -> None:
        if self.size == len(self._actions):
            self._grow()
        self._features[self.size] = torch.from_numpy(np.asarray(features, dtype=np.float32))
        self._masks[self.size] = torch.from_numpy(np.asarray(mask, dtype=bool))
        self._actions[self.size] = int(action)
        self.size += 1

    def _grow(self) -> None:
        self._features = torch.cat([self._features, torch.zeros_like(self._features)])
        self._masks = torch.cat([self._masks, torch.zeros_like(self._masks)])
        self._actions = torch.cat([self._actions, torch.zeros_like(self._actions)])

    def state_dict(self) -> dict:
        return {
            "features": self.features.numpy().copy(),
            "masks": self.masks.numpy().copy(),
            "actions": self.actions.numpy().copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.size = 0
        for features, mask, action in zip(state["features"], state["masks"], state["actions"], strict=True):
            self.add(features, mask, int(action))
