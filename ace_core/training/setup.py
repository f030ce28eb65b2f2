"""What a training run is made of, built from its config before the run touches its directory.

:func:`build_parts` seeds torch, ``random`` and the run's numpy generator, makes the grid, its
action space (restricted to ``action_subset``) and the policy inputs, SAC and its replay buffer,
the validator of the validation days and the anchor term's expert decisions, and starts the
policy from ``init_from`` or from the imitation start's clone when an earlier attempt already
cloned it; a start policy that also plays continuous moves brings them into the run's action
space (:func:`start_state`). A fresh run with ``pretrain_mine`` clones when it starts (the trainer, with
:func:`start_state`, :func:`start_from` and :func:`anchor_for`): mining and cloning take minutes,
and report to the run's sink.

Everything a run refuses (an env without train or validation days, a start policy of another grid
or shape, a foreign mine) is refused here, so a bad run never writes a file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ace_core.checkpoint import (
    check_same_space,
    days_learned,
    load_checkpoint,
    with_policy_moves,
    write_days_learned,
)
from ace_core.config import TrainConfig
from ace_core.errors import CheckpointError, ConfigError
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import Scenario, scenarios
from ace_core.imitation.anchor import DecisionLog, ExpertAnchor
from ace_core.imitation.mine_files import mine_days
from ace_core.imitation.pretrain import ImitationStart
from ace_core.rl.buffer import ReplayBuffer
from ace_core.rl.sac import SAC
from ace_core.training.validation import Validator
from ace_core.workers import HERE, Workers


@dataclass
class RunParts:
    """The pieces of a run that the trainer's loop and its extensions share."""

    out_dir: Path
    env: object
    """the grid2op environment of the train days"""
    space: ActionSpace
    features: FeatureBuilder
    sac: SAC
    buffer: ReplayBuffer
    """the RL replay buffer (an extension may wrap it for SAC to sample from)"""
    rng: np.random.Generator
    """the run's generator: exploration, batches, the teacher's draws"""
    scenarios: list[Scenario]
    """the train days"""
    validator: Validator | None
    imitation: ImitationStart | None
    """the imitation start (``pretrain_mine``), None without one"""
    anchor: ExpertAnchor | None
    """the anchor term's mined decisions; None while a fresh imitation start has not cloned yet"""
    taught: DecisionLog | None
    """the teacher's decisions, cloned by the anchor term beside the mined ones (``teacher_anchor``)"""


def build_parts(config: TrainConfig, out_dir: Path, workers: Workers = HERE) -> RunParts:
    """The run's pieces, in the order that fixes what the seeds give (see the module docstring);
    ``workers``: where the imitation start's own mines (``pretrain_mine=auto``) and the
    validations play."""
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    rng = np.random.default_rng(config.seed)
    env = make_env(
        config.env,
        opponent=config.opponent,
        demand_scale=config.demand_scale,
        demand_spread=config.demand_spread,
    )
    space = build_action_space(env)
    if config.action_subset:
        space = space.restrict_to_file(config.action_subset)
    imitation = ImitationStart(config, out_dir, workers) if config.pretrain.mine else None
    cloned = imitation is not None and imitation.done()  # by an earlier attempt of this run
    where = str(imitation.checkpoint) if cloned else config.init_from
    start, space = start_state(where, space)
    if imitation and not cloned:
        imitation.check(space)
    features = FeatureBuilder.for_policy(env, start) if start else FeatureBuilder(env)
    train_days = scenarios(env, "train", config.episode_length)
    if not train_days:
        raise ConfigError(f"env {config.env!r} has no train scenarios; pick an env with more chronics")
    validator = validator_for(config, env, space, workers)
    cloning_first = imitation is not None and not cloned
    anchor = None if cloning_first else anchor_for(config, env, space, features, imitation)
    sac = SAC(features.size, space, config.sac)
    if start:
        start_from(sac, start, where)
    return RunParts(
        out_dir=out_dir,
        env=env,
        space=space,
        features=features,
        sac=sac,
        buffer=ReplayBuffer(config.buffer_size, features.size, space.n_top),
        rng=rng,
        scenarios=train_days,
        validator=validator,
        imitation=imitation,
        anchor=anchor,
        taught=DecisionLog(features.size, space.n_top) if config.teacher.anchor else None,
    )


def start_state(init_from: str | Path, space: ActionSpace) -> tuple[dict | None, ActionSpace]:
    """The checkpoint a run starts its policy from (``init_from``, or the imitation start's clone)
    and the run's action space: ``space`` with the continuous moves that policy plays, checked
    against the checkpoint's; (None, ``space``) for a fresh policy. A resume then restores the
    run's own checkpoint."""
    if not init_from:
        return None, space
    state = load_checkpoint(Path(init_from))
    space = with_policy_moves(space, state)
    check_same_space(state, space.fingerprint(), str(init_from))
    return state, space


def start_from(sac: SAC, state: dict, where: str) -> None:
    """Load the start policy's networks only: optimisers, temperature and update count start
    afresh for RL."""
    try:
        for name in ("actor", "qf1", "qf2", "qf1_target", "qf2_target"):
            getattr(sac, name).load_state_dict(state["sac"][name])
    except (KeyError, RuntimeError) as exc:
        raise CheckpointError(
            f"start policy {where!r}: its networks do not fit this run's "
            f"(same env, head and hidden size needed): {str(exc).splitlines()[0]}"
        ) from None


def anchor_for(
    config: TrainConfig, env, space: ActionSpace, features: FeatureBuilder, imitation: ImitationStart | None
) -> ExpertAnchor | None:
    """The expert decisions of the anchor term (once the policy's feature scale is known); with
    continuous moves in ``space``, labelled with them as the clone was (``pretrain_move_labels``)."""
    if config.sac.anchor == 0:
        return None
    mines = []
    for mine in config.anchor_mines():
        # auto: every mine the run was cloned from (heavier days included)
        mines += imitation.mine_dirs() if mine == "auto" and imitation else [mine]
    labels = config.pretrain.move_labels
    return ExpertAnchor.load(mines, space, features.state_dict(), env.gen_pmax, labels)


def run_days(config: TrainConfig, train_days: list[Scenario], imitation: ImitationStart | None) -> list[str]:
    """The days a run's policy learns from: its train days, its start policy's and its mines'
    (cloned or anchored on)."""
    days = {scenario.name for scenario in train_days}
    if config.init_from:
        days.update(days_learned(Path(config.init_from)) or ())
    mines = [mine for mine in config.anchor_mines() if mine != "auto"]
    for mine in [*(imitation.mine_dirs() if imitation else ()), *mines]:
        days.update(mine_days(mine))
    return sorted(days)


def write_run_days(
    out_dir: Path, config: TrainConfig, train_days: list[Scenario], imitation: ImitationStart | None
) -> Path:
    """``out_dir/days.json``: the days of :func:`run_days`, what evaluations refuse to test it on."""
    return write_days_learned(out_dir, run_days(config, train_days, imitation))


def validator_for(config: TrainConfig, env, space: ActionSpace, workers: Workers = HERE) -> Validator | None:
    """What plays the validation days every ``validate_every`` decisions; None when it is 0."""
    if not config.validation.every:
        return None
    days = scenarios(env, "validation", config.episode_length)
    if not days:
        raise ConfigError(
            f"env {config.env!r} has no validation scenarios; set validate_every=0 or pick an env with more chronics"
        )
    return Validator(
        config.env,
        space,
        days,
        config.validation.seeds,
        config.rho_threshold,
        config.validation.demand_scale,
        config.validation.opponent,
        config.validation.attack_seeds,
        workers,
        config.validation.uneven_scales(),
        config.validation.uneven_seeds,
    )
