"""What-if: an operator's action simulated one step ahead from a state of the live grid.

A what-if is the recommendation pipeline's candidate for the action
(:meth:`~ace_core.recommend.pipeline.RecommendationPipeline.what_if`: its one-step outcome, N-1 and
look-ahead, simulated once) and a refusal: the legality rules' reason when the action cannot be
played (:mod:`ace_core.live.legality`; then nothing is simulated), or the simulated step's failure.
An action with a continuous move (redispatch, curtailment, storage) is simulated with it, and its
figures carry the move and its cost (MW moved, euros per hour).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ace_core.live.actions import LiveAction, describe_action, to_grid2op
from ace_core.live.recommendations import TOP_OUTAGES, figures_of
from ace_core.recommend.outcomes import Candidate
from ace_core.recommend.pipeline import RecommendationPipeline


@dataclass(frozen=True)
class WhatIf:
    """An action simulated one step ahead, or refused."""

    action: dict[str, Any]
    description: str
    max_rho_before: float
    """rounded to 1e-4, as the console shows it"""
    refusal: str = ""
    """why the action cannot be played (empty when it can)"""
    candidate: Candidate | None = None
    """the pipeline's candidate for the action; None when the rules refused it"""

    @property
    def legal(self) -> bool:
        return not self.refusal

    @property
    def figures(self) -> dict[str, Any]:
        """The pipeline's figures (N-1, look-ahead, outcome in words), as cards carry them; empty
        for a refused action."""
        if not self.legal:
            return {}
        return figures_of(self.candidate.to_json(TOP_OUTAGES))

    def to_dict(self) -> dict[str, Any]:
        outcome = self.candidate.outcome if self.legal else None
        return {
            "action": self.action,
            "description": self.description,
            "legal": self.legal,
            "refusal": self.refusal,
            "max_rho_before": self.max_rho_before,
            "max_rho_after": None if outcome is None else round(outcome.max_rho_after, 4),
            "overloads_after": [] if outcome is None else list(outcome.overloads_after),
            "lines_relieved": [] if outcome is None else list(outcome.lines_relieved),
            "new_overloads": [] if outcome is None else list(outcome.new_overloads),
            "rho_after": [] if outcome is None else [round(float(r), 3) for r in outcome.rho_after],
            "figures": self.figures,
        }


def what_if(pipeline: RecommendationPipeline, obs, action: LiveAction, refusal: str = "") -> WhatIf:
    """``action`` simulated one step ahead of ``obs`` by ``pipeline``; refused with ``refusal``
    when that is not empty (the action cannot be played, see :mod:`ace_core.live.legality`)."""
    common = {
        "action": action.to_dict(),
        "description": describe_action(action, pipeline.space),
        "max_rho_before": round(float(np.max(obs.rho)), 4),
    }
    if refusal:
        return WhatIf(**common, refusal=refusal)
    topology = to_grid2op(replace(action, move=None), pipeline.space, pipeline.g2op_space)
    candidate = pipeline.what_if(obs, topology, move=action.move)
    return WhatIf(**common, refusal=candidate.outcome.error, candidate=candidate)
