"""What a training run can be extended with, without the trainer knowing the extension by name.

The trainer (:mod:`ace_core.training.trainer`) owns the environment loop; an extension is told what happens
in it and may take a decision in the agent's place. :class:`TrainerExtension` is the protocol and
its null default: every hook does nothing, so an extension overrides only what it needs. The
trainer calls, in order of the loop:

- ``choose(step, obs, features, mask)`` at a decision: an action index to play instead of the
  policy's, or None (the first extension that answers wins);
- ``note_decision(step, episode, obs, features, mask, action)`` once the action is settled;
- ``note_step_reward(reward)`` with the first step's reward after a decision;
- ``note_stored(row, episode_step, max_rho, action, step_reward)`` when the decision's transition
  enters the replay buffer as ``row`` (what :meth:`ReplayBuffer.add` returned);
- ``end_episode(episode, survived, max_steps)`` after an episode's last step;
- ``after_step(step)`` after every environment step;
- ``metrics()`` at each report: namespaced figures to add (the window resets);
- ``state_dict()`` / ``load_state_dict(state)``: its part of the checkpoint, under ``name``.

``replay(buffer)`` says what SAC samples from (an extension may wrap the RL buffer, as ACE's
mixed buffer does) and ``use_sink(sink)`` hands it the run's event sink.
"""

from __future__ import annotations

import numpy as np

from ace_core.events import EventSink


class TrainerExtension:
    """The null extension (see the module docstring)."""

    name = ""
    """key of its state in the checkpoint"""

    def use_sink(self, sink: EventSink) -> None:
        pass

    def replay(self, buffer):
        return buffer

    def choose(self, step: int, obs, features: np.ndarray, mask: np.ndarray) -> int | None:
        return None

    def note_decision(
        self, step: int, episode: int, obs, features: np.ndarray, mask: np.ndarray, action: int
    ) -> None:
        pass

    def note_step_reward(self, reward: float) -> None:
        pass

    def note_stored(
        self, row: int, episode_step: int, max_rho: float, action: int, step_reward: float
    ) -> None:
        pass

    def end_episode(self, episode: int, survived: int, max_steps: int) -> None:
        pass

    def after_step(self, step: int) -> None:
        pass

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass
