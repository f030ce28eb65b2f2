"""The cloning loss with the expert's real actions weighted (``action_weight``, ``anchor_action_weight``)."""

import numpy as np
import pytest
import torch

from ace_core.config import TrainConfig
from ace_core.grid.action_space import DO_NOTHING, build_action_space
from ace_core.grid.envs import make_env
from ace_core.imitation.cloning import CloneConfig, behaviour_clone, top_masks
from ace_core.imitation.data import load_dataset
from ace_core.rl.cloning import cloning_loss
from ace_core.rl.sac import SAC


@pytest.mark.parametrize("weight", [1, 3, 7])
def test_a_real_action_counts_as_many_times_as_its_weight(weight):
    actions = torch.tensor([DO_NOTHING, 4, DO_NOTHING, 9, DO_NOTHING])
    log_prob = torch.tensor([-0.1, -2.0, -0.3, -1.5, -0.2])
    repeats = torch.where(actions != DO_NOTHING, weight, 1)
    repeated = log_prob.repeat_interleave(repeats)
    assert cloning_loss(log_prob, actions, float(weight)).item() == pytest.approx(-repeated.mean().item())


def test_a_batch_of_do_nothing_alone_is_the_plain_mean():
    log_prob = torch.tensor([-0.5, -1.5])
    actions = torch.full((2,), DO_NOTHING)
    assert cloning_loss(log_prob, actions, 10.0).item() == pytest.approx(1.0)


def _mean_real_action_likelihood(action_weight: float, spec, out) -> tuple[float, float]:
    """(mean pi(a_expert | s) on the expert's real actions, on its do-nothing decisions) after cloning."""
    env = make_env(spec.env)
    space = build_action_space(env)
    dataset = load_dataset(out, space)
    rows = np.arange(len(dataset))
    torch.manual_seed(0)
    sac = SAC(dataset.features.shape[1], space, TrainConfig(env=spec.env, hidden=64).sac)
    behaviour_clone(sac, dataset, rows, CloneConfig(epochs=10, action_weight=action_weight))
    with torch.no_grad():
        policy = sac.actor(
            torch.from_numpy(dataset.features), torch.from_numpy(top_masks(space, dataset.legal()))
        )
        likelihood = policy.log_prob(torch.from_numpy(dataset.actions)).exp().numpy()
    real = dataset.actions != DO_NOTHING
    return float(likelihood[real].mean()), float(likelihood[~real].mean())


def test_weighting_real_actions_makes_the_clone_play_them_more_readily(mined):
    spec, out, _ = mined
    plain_real, plain_wait = _mean_real_action_likelihood(1.0, spec, out)
    weighted_real, weighted_wait = _mean_real_action_likelihood(8.0, spec, out)
    assert weighted_real > plain_real, (plain_real, weighted_real)
    assert weighted_wait < plain_wait, (plain_wait, weighted_wait)
