"""Expert-guided exploration, as a trainer extension.

At a decision, with a probability that falls linearly from ``teacher_prob`` at step 0 to 0 at
``teacher_steps``, the run plays the greedy expert's action (the lowest simulated max rho among
reconnect-or-nothing, the policy's ``teacher_top_k`` most likely actions and ``teacher_budget``
greedy candidates) instead of the policy's. Its transitions enter the same replay buffer, so twin
Q learns what good topologies are worth and the soft policy update follows Q; the trained policy
still acts alone. The draw uses the trainer's generator, and none is made once the schedule is
over, so the rest of the run samples as a run without teacher.

With ``teacher_anchor`` every decision the teacher takes is also kept in the run's
:class:`DecisionLog` (``taught``, which the trainer hands the anchor term too) and the anchor term
clones it beside the mined ones (:mod:`ace_core.imitation.anchor`).
"""

from __future__ import annotations

import numpy as np

from ace_core.agents.greedy import greedy_search
from ace_core.config import TrainConfig
from ace_core.extension import TrainerExtension
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import real_action
from ace_core.imitation.anchor import DecisionLog
from ace_core.rl.sac import SAC


class ExpertTeacher(TrainerExtension):
    name = "teacher"

    def __init__(
        self,
        config: TrainConfig,
        space: ActionSpace,
        g2op_space,
        sac: SAC,
        rng: np.random.Generator,
        taught: DecisionLog | None = None,
    ) -> None:
        self.config, self.space, self.g2op_space = config, space, g2op_space
        self.sac, self.rng = sac, rng
        self.decisions = 0
        """decisions the expert took"""
        self.taught = taught
        """where those decisions are kept for the anchor term to clone (``teacher_anchor``), or None"""
        self._step = 0

    def probability(self, step: int) -> float:
        config = self.config
        return config.teacher.prob * max(0.0, 1.0 - step / config.teacher.steps)

    def choose(self, step: int, obs, features: np.ndarray, mask: np.ndarray) -> int | None:
        probability = self.probability(step)
        if not (probability > 0 and self.rng.random() < probability):
            return None
        self.decisions += 1
        action = real_action(obs, self.space, self.expert_action(obs, features, mask))
        if self.taught is not None:
            self.taught.add(features, mask, action)
        return action

    def expert_action(self, obs, features: np.ndarray, mask: np.ndarray) -> int:
        k = self.config.teacher.top_k
        ranked = [index for index, _ in self.sac.policy(features, mask).top_k(k)] if k else []
        action, _, _ = greedy_search(
            obs, self.space, self.g2op_space, self.config.teacher.budget, extra=ranked
        )
        return action

    def after_step(self, step: int) -> None:
        self._step = step

    def metrics(self) -> dict[str, float]:
        return {
            "train/teacher_decisions": float(self.decisions),
            "train/teacher_prob": self.probability(self._step),
        }

    def state_dict(self) -> dict:
        taught = {"taught": self.taught.state_dict()} if self.taught is not None else {}
        return {"decisions": self.decisions, **taught}

    def load_state_dict(self, state: dict) -> None:
        self.decisions = state["decisions"]
        if self.taught is not None and "taught" in state:  # absent before teacher_anchor: none kept yet
            self.taught.load_state_dict(state["taught"])
