"""Checkpoints: everything needed to resume a run exactly, or to deploy its policy.

A checkpoint is one ``torch.save`` file written atomically (temp file, then rename): the config,
the action-space fingerprint (so another env's policy is refused), the SAC networks and
optimisers, the replay buffer, the loop's counters and RNG states, and the actions of the
current episode (resume replays them to rebuild the grid state exactly).

:func:`write_checkpoint` is the one writer of that layout: what deploying a policy needs (config,
fingerprint, subset, networks, feature normalisation), then whatever a training run adds. The
trainer and :func:`~ace_core.live.policy.untrained_policy` both write through it.

A run directory holds ``checkpoint.pt`` (the last state, to resume) and, when the run validates,
``best.pt`` (the policy that did best on the validation days, without buffer), and with
``validation_keep`` every validated policy in ``validated/`` (:func:`validated_file`), to compare
them or choose again on more episodes. Whoever loads "the
run's policy" from a directory gets ``best.pt`` when there is one (:func:`load_checkpoint`); a file
path loads that file. Beside them, ``days.json`` names the days the policy learned from (its
own train days, its mines', its start policy's), so that an evaluation can refuse a test day it
saw under another cut of the split (:func:`~ace_core.grid.scenarios.learned_in`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ace_core.errors import CheckpointError

if TYPE_CHECKING:
    from ace_core.grid.action_space import ActionSpace
    from ace_core.grid.features import FeatureBuilder
    from ace_core.rl.sac import SAC

FORMAT_VERSION = 1
CHECKPOINT_NAME = "checkpoint.pt"
BEST_NAME = "best.pt"
DAYS_NAME = "days.json"
VALIDATED_DIR = "validated"


def validated_file(run_dir: Path, decisions: int) -> Path:
    """Where a run kept (``validation_keep``) the policy it validated after ``decisions``."""
    return Path(run_dir) / VALIDATED_DIR / f"decisions-{decisions}.pt"


def save_checkpoint(state: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as tmp:
        torch.save({"format": FORMAT_VERSION, **state}, tmp)
    os.replace(tmp.name, path)
    return path


def write_checkpoint(
    path: Path, *, config: dict, space: ActionSpace, features: FeatureBuilder, sac: SAC, **training: Any
) -> Path:
    """A policy's checkpoint at ``path``: ``config`` (the run's settings as a dict), the action
    space's fingerprint and subset, the networks and the feature normalisation, plus ``training``
    (buffer, loop, RNG states, extensions) when a run writes it to resume."""
    state = {
        "config": config,
        "fingerprint": space.fingerprint(),
        "subset": space.subset,
        "moves": [move.to_dict() for move in space.moves],
        "sac": sac.state_dict(),
        "features": features.state_dict(),
        **training,
    }
    return save_checkpoint(state, path)


def policy_file(path: Path) -> Path:
    """The file that holds a run's policy: ``path`` itself, or in a run directory ``best.pt``
    when the run validated, else ``checkpoint.pt``."""
    path = Path(path)
    if path.is_dir():
        best = path / BEST_NAME
        return best if best.is_file() else path / CHECKPOINT_NAME
    return path


def write_days_learned(run_dir: Path, days: Iterable[str]) -> Path:
    """Name the days (scenario names) the policy of ``run_dir`` learned from, whole or not at all."""
    path = Path(run_dir) / DAYS_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(sorted(set(days)), indent=0))
    os.replace(partial, path)
    return path


def days_learned(path: Path) -> list[str] | None:
    """The days the policy at ``path`` (a run directory or one of its policy files, those kept in
    ``validated/`` included) learned from; None for a run made before runs named them."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if folder != path and folder.name == VALIDATED_DIR:  # a kept policy: its run's days
        folder = folder.parent
    found = folder / DAYS_NAME
    try:
        return [str(day) for day in json.loads(found.read_text())]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{found} is unreadable ({exc}); delete it to evaluate without it") from None


def load_checkpoint(path: Path) -> dict:
    """The checkpoint at ``path``: a file, or a run directory's policy (:func:`policy_file`)."""
    path = policy_file(path)
    if not path.is_file():
        raise CheckpointError(
            f"no checkpoint at {path}; give a run directory or a {CHECKPOINT_NAME} / {BEST_NAME} file"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises many types for a damaged file
        raise CheckpointError(f"checkpoint {path} is corrupt or not a GridACE checkpoint ({exc})") from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{path} is not a GridACE checkpoint (format {FORMAT_VERSION} expected)")
    return state


def with_policy_moves(space: ActionSpace, state: dict) -> ActionSpace:
    """``space`` with the continuous moves the checkpoint's policy plays (``space`` itself for a
    topology policy, or when it has moves already: the fingerprint then judges)."""
    if not state.get("moves") or space.moves:
        return space
    from ace_core.grid.flex.moves import FlexMove

    return space.with_moves(FlexMove.from_dict(move) for move in state["moves"])


def check_same_space(state: dict, fingerprint: str, where: str) -> None:
    if state["fingerprint"] != fingerprint:
        raise CheckpointError(
            f"checkpoint {where} was trained on action space {state['fingerprint']!r}, "
            f"but this env has {fingerprint!r}: use a checkpoint trained on the same env"
        )
