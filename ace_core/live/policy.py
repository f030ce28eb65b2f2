"""Policies without a training run (benchmarks, tests, the first demo)."""

from __future__ import annotations

from pathlib import Path

import torch

from ace_core.checkpoint import write_checkpoint
from ace_core.config import TrainConfig
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.rl.sac import SAC


def untrained_policy(env_name: str, path: Path, *, hidden: int = 64, env=None) -> Path:
    """A policy checkpoint with random weights for ``env_name``: the same files and code path as a
    trained run's, for benchmarks and tests that measure speed, not quality."""
    env = env if env is not None else make_env(env_name)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    config = TrainConfig(env=env_name, hidden=hidden)
    torch.manual_seed(0)
    sac = SAC(features.size, space, config.sac)
    return write_checkpoint(Path(path), config=config.full_dict(), space=space, features=features, sac=sac)
