"""The per-step reward GridACE trains and reports with: the thermal margin of the most loaded line.

``r_t = clip(1 - max(rho), -1, 1)``, and ``-1`` on game over. Positive while every line is under
its limit, negative when a line overloads, so a survived step is always worth more than a
blackout, and the LLM actor's threshold ``r_bar`` reads directly as a max-rho level
(``r_bar = 0`` refines decisions that left a line at or above 100 %).
"""

from __future__ import annotations

import numpy as np
from grid2op.Reward import BaseReward


class MarginReward(BaseReward):
    def __init__(self, logger=None) -> None:
        super().__init__(logger=logger)
        self.reward_min = np.float32(-1.0)
        self.reward_max = np.float32(1.0)

    def __call__(self, action, env, has_error, is_done, is_illegal, is_ambiguous) -> float:
        if has_error:
            return self.reward_min
        rho = env.backend.get_relative_flow()
        return float(np.clip(1.0 - float(np.nanmax(rho)), -1.0, 1.0))
