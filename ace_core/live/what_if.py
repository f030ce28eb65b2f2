"""What-if: an operator's action simulated one step ahead from the current state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.simulate import ILLEGAL, exception_text, failure, simulate_rho
from ace_core.live.actions import LiveAction, describe_action, to_grid2op
from ace_core.live.states import OVERLOAD


@dataclass(frozen=True)
class WhatIf:
    """An action simulated one step ahead from the current state."""

    action: dict[str, Any]
    description: str
    legal: bool
    refusal: str
    """why the action cannot be played (empty when legal)"""
    max_rho_before: float
    max_rho_after: float | None
    overloads_after: tuple[int, ...] = ()
    lines_relieved: tuple[int, ...] = ()
    new_overloads: tuple[int, ...] = ()
    rho_after: tuple[float, ...] = ()
    figures: dict[str, Any] = field(default_factory=dict)
    """the recommendation pipeline's figures (N-1, look-ahead, outcome in words), as cards carry"""

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "description": self.description,
            "legal": self.legal,
            "refusal": self.refusal,
            "max_rho_before": self.max_rho_before,
            "max_rho_after": self.max_rho_after,
            "overloads_after": list(self.overloads_after),
            "lines_relieved": list(self.lines_relieved),
            "new_overloads": list(self.new_overloads),
            "rho_after": list(self.rho_after),
            "figures": self.figures,
        }


def what_if(obs, action: LiveAction, space: ActionSpace, g2op_space, refusal: str) -> WhatIf:
    """Simulate ``action`` one step ahead of ``obs``; refused with ``refusal`` when that is not
    empty (the action cannot be played, see :mod:`ace_core.live.legality`)."""
    before = np.asarray(obs.rho)
    common = {
        "action": action.to_dict(),
        "description": describe_action(action, space),
        "max_rho_before": round(float(before.max()), 4),
    }
    if refusal:
        return WhatIf(legal=False, refusal=refusal, max_rho_after=None, **common)
    simulated = simulate_rho(obs, to_grid2op(action, space, g2op_space))
    why = failure(simulated)
    if why == ILLEGAL:
        return WhatIf(
            legal=False, refusal="illegal: " + exception_text(simulated.info), max_rho_after=None, **common
        )
    if why:
        return WhatIf(
            legal=False,
            refusal="the grid would fail: " + exception_text(simulated.info),
            max_rho_after=None,
            **common,
        )
    rho = simulated.rho
    return WhatIf(
        legal=True,
        refusal="",
        max_rho_after=round(float(rho.max()), 4),
        overloads_after=tuple(int(i) for i in np.flatnonzero(rho >= OVERLOAD)),
        lines_relieved=tuple(int(i) for i in np.flatnonzero((before >= OVERLOAD) & (rho < OVERLOAD))),
        new_overloads=tuple(int(i) for i in np.flatnonzero((before < OVERLOAD) & (rho >= OVERLOAD))),
        rho_after=tuple(round(float(r), 3) for r in rho),
        **common,
    )
