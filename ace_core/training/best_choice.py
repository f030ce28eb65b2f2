"""Which validated policy a run keeps as ``best.pt``: one rule for the trainer, which keeps it, and
for the web app's run pages, which read a run's validations back from its metrics.

A validation reports its figures as metrics (``eval/validation_survival...``,
:meth:`ace_core.training.validation.Validation.metrics`); the rule reads those. By default the
survival over every copy of the validation days decides (the days as they are, heavier, under
attacks, uneven). ``validation_decides=attacks`` lets the attacked copy alone decide,
``validation_decides=uneven`` the uneven copies' mean, and
``validation_floor`` puts a policy that survives at least that share of the days as they are
before any that does not: a policy for attacked grids that still holds ordinary days. Ties keep
the earlier policy. Imports nothing heavy: the web process asks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SURVIVAL = "eval/validation_survival"
"""mean survival over every copy played"""
SURVIVAL_AS_THEY_ARE = "eval/validation_survival_demand_1.0"
"""the days as they are, reported when another copy was played too"""
SURVIVAL_UNDER_ATTACKS = "eval/validation_survival_attacks"
SURVIVAL_UNEVEN = "eval/validation_survival_uneven"
"""mean survival over the uneven copies (``validation_uneven``)"""
DECIDING = {"mean": SURVIVAL, "attacks": SURVIVAL_UNDER_ATTACKS, "uneven": SURVIVAL_UNEVEN}
"""the metric each ``validation_decides`` chooses by"""


@dataclass(frozen=True)
class BestChoice:
    decides: str = "mean"
    """mean: the survival over every copy played; attacks: the attacked copy's; uneven: the uneven copies' mean"""
    floor: float = 0.0
    """a policy holding at least this share of the days as they are beats one that does not"""

    @classmethod
    def of_config(cls, config: Mapping[str, Any]) -> BestChoice:
        """The choice of a run whose settings are ``config`` (a flat TrainConfig dict; a run
        older than these settings chose on the mean)."""
        return cls(config.get("validation_decides", "mean"), float(config.get("validation_floor", 0.0)))

    def key(self, metrics: Mapping[str, float]) -> tuple[bool, float]:
        """How a validation ranks, from its metrics: holds the floor first, then the survival that decides."""
        mean = metrics[SURVIVAL]
        as_they_are = metrics.get(SURVIVAL_AS_THEY_ARE, mean)
        # a validation without the copy that decides (none in a run that asks for it) ranks on the mean
        decisive = metrics.get(DECIDING[self.decides], mean)
        return as_they_are >= self.floor, float(decisive)

    def prefers(self, metrics: Mapping[str, float], best: Mapping[str, float] | None) -> bool:
        """Whether the validation of ``metrics`` replaces ``best`` (ties keep the earlier one)."""
        return best is None or self.key(metrics) > self.key(best)
