"""What a run's checkpoint holds beyond its policy, and how a resume takes the run back to it.

A checkpoint holds the replay buffer, the loop's counters and the actions of the episode under
way, the three random generators and each extension's state (under its name). A resume checks
that the run is the same (action space, settings but ``steps`` and ``decisions``, policy inputs),
restores all of it (:func:`restore`) and replays the episode under way on the same scenario and
seed; the trainer then drops the log lines written after the checkpoint (:func:`truncate_logs`),
which the resumed run writes again: a resumed run is identical to an uninterrupted one.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ace_core.checkpoint import check_same_space
from ace_core.errors import CheckpointError
from ace_core.training.pending import Pending
from ace_core.training.teacher import ExpertTeacher
from ace_core.training.validation import Validation

if TYPE_CHECKING:
    from ace_core.training.trainer import Trainer

LOGS = ("metrics.jsonl", "events.jsonl", "critic.jsonl")
"""the run directory's logs, one JSON line per event with its ``step``"""


def training_state(trainer: Trainer) -> dict:
    """The checkpoint's training part: buffer, loop, generators, extensions."""
    return {
        "buffer": trainer.buffer.state_dict(),
        "loop": _loop_state(trainer),
        "rng": {
            "numpy": trainer.rng.bit_generator.state,
            "torch": torch.get_rng_state(),
            "python": random.getstate(),
        },
        **{extension.name: extension.state_dict() for extension in trainer.extensions},
    }


def restore(trainer: Trainer, state: dict) -> None:
    """Take ``trainer`` back to the checkpoint ``state`` of its run (see the module docstring)."""
    _check_same_run(trainer, state)
    trainer.sac.load_state_dict(state["sac"])
    trainer.buffer.load_state_dict(state["buffer"])
    loop = state["loop"]
    _load_loop_state(trainer, loop)
    # before extensions, the teacher's count was a loop counter (absent before expert guidance)
    state.setdefault(ExpertTeacher.name, {"decisions": loop.get("teacher_decisions", 0)})
    trainer.rng.bit_generator.state = state["rng"]["numpy"]
    torch.set_rng_state(state["rng"]["torch"])
    random.setstate(state["rng"]["python"])
    _replay_episode(trainer, loop["episode_actions"])
    # after the replay: extensions may re-attach observations to the env
    for extension in trainer.extensions:
        extension.load_state_dict(state[extension.name])


def _check_same_run(trainer: Trainer, state: dict) -> None:
    check_same_space(state, trainer.space.fingerprint(), str(trainer.out_dir))
    # the only settings a resume may change are how far to go; settings added since the
    # checkpoint was written are not in it, and keep this config's values
    changed = [
        name for name in trainer.config.differences(state["config"]) if name not in ("steps", "decisions")
    ]
    if changed:
        raise CheckpointError(f"resume must use the run's settings; these differ: {', '.join(changed)}")
    saved = state.get("features", {})
    if bool(saved.get("overflow", False)) != trainer.features.overflow:
        raise CheckpointError(
            f"{trainer.out_dir} was trained on the policy inputs of an older GridACE (no overflow "
            "counters) and cannot be resumed; start a new run from it with --init-from"
        )


def _loop_state(trainer: Trainer) -> dict:
    """The loop's counters, the episode under way and the metric window."""
    return {
        "step": trainer.step,
        "episode": trainer.episode,
        "decisions": trainer.decisions,
        "episode_actions": list(trainer.episode_actions),
        "pending": None if trainer.pending is None else vars(trainer.pending).copy(),
        "window": {k: list(v) for k, v in trainer._window.items()},
        "validated_at": trainer.validated_at,
        "best": trainer.best.as_dict() if trainer.best else None,
    }


def _load_loop_state(trainer: Trainer, loop: dict) -> None:
    trainer.step, trainer.episode, trainer.decisions = loop["step"], loop["episode"], loop["decisions"]
    trainer._window = {k: list(v) for k, v in loop["window"].items()}
    trainer.validated_at = loop.get("validated_at")  # absent before validation
    trainer.best = Validation(**loop["best"]) if loop.get("best") else None
    trainer.pending = Pending(**loop["pending"]) if loop["pending"] else None


def _replay_episode(trainer: Trainer, actions: list[int]) -> None:
    """Rebuild the grid state of the episode under way by playing its actions again."""
    trainer._start_episode()
    for action in actions:
        trainer.obs, reward, done, _ = trainer.env.step(trainer.grid_action(trainer.obs, action))
        trainer.episode_return += reward
        if done:
            raise CheckpointError("replaying the checkpoint's episode ended early: the env changed")
    trainer.episode_actions = list(actions)


def truncate_logs(out: Path, after_step: int) -> None:
    """Drop log lines written after the checkpoint: the resumed run writes them again."""
    for name in LOGS:
        path = Path(out) / name
        if path.exists():
            lines = path.read_text().splitlines()
            kept = [line for line in lines if json.loads(line).get("step", 0) <= after_step]
            path.write_text("".join(line + "\n" for line in kept))
