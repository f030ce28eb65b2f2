"""Behaviour cloning: the SAC policy taught to play like the expert before RL.

:func:`behaviour_clone` minimises ``-log pi(a_expert | s)`` over a mined dataset
(:mod:`ace_core.imitation.data`) with the policy's own head (flat on the 14-bus grids, factorised
above 5,000 actions, :mod:`ace_core.rl.heads`) and its legality masks; only the actor moves (the
Q networks and the temperature are left to RL). :func:`agreement` is the share of decisions where
the policy's most likely action, played as the agents play it (a no-op in disguise is
do-nothing), is the expert's.

``python -m ace_core pretrain --env ENV --dataset MINE_DIR --out RUN_DIR`` holds out the last
quarter of the mined days, clones on the rest, and writes ``RUN_DIR/checkpoint.pt`` (a
policy ``sac:RUN_DIR`` evaluates and that training can start from) and ``pretrain.json`` with the
agreement before and after on the held-out decisions. ``--dataset`` repeated clones on several
mines at once (DAgger's aggregate, :mod:`ace_core.imitation.dagger`): their decisions are concatenated,
the same days held out in all of them (days match by scenario name), and they must share the
action space and the feature scale.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from ace_core.grid.action_space import DO_NOTHING, ActionSpace
from ace_core.imitation.data import Dataset
from ace_core.kernels import CLONE_THREADS, adam, kernels_in_force, torch_threads
from ace_core.rl.cloning import cloning_loss
from ace_core.rl.sac import SAC


@dataclasses.dataclass(frozen=True)
class CloneConfig:
    epochs: int = 30
    """passes over the training decisions"""
    batch_size: int = 64
    """decisions per gradient step"""
    lr: float = 1e-3
    """actor learning rate during cloning"""
    seed: int = 0
    """shuffling seed"""
    action_weight: float = 1.0
    """how many times each of the expert's real actions (not do-nothing) counts in the loss (:mod:`ace_core.rl.cloning`)"""


def top_masks(space: ActionSpace, legal: np.ndarray) -> np.ndarray:
    """Top-level legality (do nothing, each reconnection, each substation) from action-level masks."""
    out = np.zeros((len(legal), space.n_top), dtype=bool)
    for row, mask in enumerate(legal):
        out[row, np.unique(space.top_of_action[mask])] = True
    out[:, 0] = True  # doing nothing is always legal
    return out


def split_by_day(dataset: Dataset, holdout: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, held-out rows): every decision of the last ``holdout`` share of the mined days
    (at least one day, whatever seed it was played with) is held out, so held-out states come
    from days the policy never saw."""
    day = dataset.arrays.get("day", dataset.arrays.get("episode", np.zeros(len(dataset), dtype=np.int64)))
    days = np.unique(day)
    if len(days) < 2:
        raise ValueError("holding out states needs decisions from at least two days")
    n_held = max(1, int(round(holdout * len(days))))
    held = np.isin(day, days[-n_held:])
    return np.flatnonzero(~held), np.flatnonzero(held)


def behaviour_clone(
    sac: SAC, dataset: Dataset, rows: np.ndarray, config: CloneConfig = CloneConfig()
) -> list[float]:
    """Fit the actor to the expert's actions on ``rows``; returns the mean loss of each epoch."""
    features = torch.from_numpy(dataset.features[rows])
    masks = torch.from_numpy(top_masks(sac.space, dataset.legal(rows)))
    actions = torch.from_numpy(dataset.actions[rows])
    optimizer = adam(sac.actor.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    for _ in range(config.epochs):
        order = torch.randperm(len(rows), generator=generator)
        total = 0.0
        for start in range(0, len(rows), config.batch_size):
            batch = order[start : start + config.batch_size]
            log_prob = sac.actor(features[batch], masks[batch]).log_prob(actions[batch])
            loss = cloning_loss(log_prob, actions[batch], config.action_weight)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(sac.actor.parameters(), sac.config.max_grad_norm)
            optimizer.step()
            total += loss.item() * len(batch)
        losses.append(total / len(rows))
    sac._actor_weights = None  # the numpy fast path re-reads the weights
    return losses


def agreement(sac: SAC, dataset: Dataset, rows: np.ndarray) -> float:
    """Share of ``rows`` where the policy's most likely action, a no-op in disguise counted as
    do-nothing, is the expert's action."""
    legal = dataset.legal(rows)
    masks = top_masks(sac.space, legal)
    hits = 0
    for k, row in enumerate(rows):
        action = sac.act(dataset.features[row], masks[k], None)
        if not legal[k, action]:
            action = 0
        hits += int(action == dataset.actions[row])
    return hits / len(rows)


@torch_threads(CLONE_THREADS)
def pretrain(
    env_name: str,
    dataset_path,
    out: Path,
    config: CloneConfig = CloneConfig(),
    hidden: int = 256,
    moves: int = 0,
    move_labels: str = "all",
) -> dict:
    """Clone the expert of a mine (``dataset_path``: one path, or a list of them to aggregate)
    into a fresh policy and save it as a run checkpoint. ``moves``: the policy also plays the
    ``moves`` most frequent discrete forms of the continuous moves the expert played
    (:mod:`ace_core.grid.flex.discrete`; mines of an expert with ``flex``), learned at the
    decisions ``move_labels`` names (:data:`~ace_core.config.checks.MOVE_LABELS`). Torch clones on
    :data:`~ace_core.kernels.CLONE_THREADS` threads, so the clone is the same whatever the
    machine's cores and the caller's threads."""
    from ace_core.checkpoint import CHECKPOINT_NAME, save_checkpoint, write_days_learned
    from ace_core.config import TrainConfig
    from ace_core.config.checks import MOVE_LABELS, in_range, one_of
    from ace_core.errors import ConfigError
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env
    from ace_core.grid.flex.discrete import mined_moves
    from ace_core.imitation.data import concat_datasets, load_dataset

    train_config = TrainConfig(env=env_name, hidden=hidden).validate()
    if config.epochs < 1 or config.batch_size < 1:
        raise ConfigError(
            f"--epochs ({config.epochs}) and --batch-size ({config.batch_size}) must be at least 1"
        )
    in_range("--action-weight", config.action_weight, 0.01, 100.0)
    if moves:
        in_range("--moves", moves, 1, 200)
        one_of("--move-labels", move_labels, MOVE_LABELS)
    out = Path(out)
    if (out / CHECKPOINT_NAME).exists():
        raise ConfigError(f"{out} already holds a checkpoint; choose another --out")
    env = make_env(env_name)
    space = build_action_space(env)
    paths = [dataset_path] if isinstance(dataset_path, (str, Path)) else list(dataset_path)
    loaded = [(str(path), load_dataset(path, space)) for path in paths]
    digests = [one.digest() for _, one in loaded]
    dataset = concat_datasets(loaded)
    if moves:
        played = dataset.played_moves(space, move_labels)
        space = space.with_moves(mined_moves(played, env.gen_pmax, moves))
        if not space.moves:
            raise ConfigError(
                f"--moves {moves}: dataset {dataset_path} holds no continuous move; mine with an "
                "expert that plays them (e.g. greedy:flex=4), or leave --moves out"
            )
        dataset = dataset.with_moves(space, env.gen_pmax, move_labels)
    try:
        train_rows, held_rows = split_by_day(dataset)
    except ValueError as exc:
        raise ConfigError(f"dataset {dataset_path}: {exc}") from None
    torch.manual_seed(config.seed)
    sac = SAC(len(dataset.features[0]), space, train_config.sac)
    before = agreement(sac, dataset, held_rows)
    real_rows = held_rows[dataset.actions[held_rows] != DO_NOTHING]
    losses = behaviour_clone(sac, dataset, train_rows, config)
    report = {
        "env": env_name,
        "dataset": str(paths[0]) if len(paths) == 1 else [str(path) for path in paths],
        "decisions": len(dataset),
        "moves": len(space.moves),
        "move_labels": move_labels if moves else None,
        "move_decisions": int(np.sum(dataset.actions >= space.first_move)),
        "train_decisions": len(train_rows),
        "held_out_decisions": len(held_rows),
        "agreement_before": before,
        "agreement_after": agreement(sac, dataset, held_rows),
        # most decisions are the expert's "do nothing": its real actions are the hard part
        "real_action_agreement_after": agreement(sac, dataset, real_rows) if len(real_rows) else None,
        "held_out_real_actions": len(real_rows),
        "train_agreement_after": agreement(sac, dataset, train_rows),
        "loss_first_epoch": losses[0],
        "loss_last_epoch": losses[-1],
        "clone": dataclasses.asdict(config),
        "kernels": kernels_in_force(),
        # the same digests on two machines: the same mines, so the clones differ by their kernels
        "decisions_digest": digests[0] if len(digests) == 1 else digests,
        # the same weights digest on two machines: the same clone, bit for bit
        "weights_digest": sac.weights_digest(),
    }
    if len(paths) > 1:
        # per dataset: the last one is the newest policy's own states, DAgger's figure of merit
        source = dataset.arrays["source"]
        report["held_out_agreement_by_dataset"] = [
            agreement(sac, dataset, held_rows[source[held_rows] == i])
            if np.any(source[held_rows] == i)
            else None
            for i in range(len(paths))
        ]
        report["decisions_by_dataset"] = np.bincount(source, minlength=len(paths)).tolist()
    state = {
        "config": train_config.to_dict(),
        "fingerprint": space.fingerprint(),
        "subset": None,
        "moves": [move.to_dict() for move in space.moves],
        "sac": sac.state_dict(),
        "features": {"load_scale": np.asarray(dataset.load_scale).tolist(), "overflow": dataset.overflow},
        "pretrain": report,
    }
    save_checkpoint(state, out / CHECKPOINT_NAME)
    if "day_name" in dataset.arrays:  # a dataset joined before day names names none: not checked
        write_days_learned(out, (str(day) for day in dataset.arrays["day_name"]))
    (out / "pretrain.json").write_text(json.dumps(report, indent=2))
    return report
