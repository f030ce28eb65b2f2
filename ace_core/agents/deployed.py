"""How each grid's trained policy is deployed: the check it is played with (``sac-checked``, with
the expert's search as its safety net) and the options of the plain policy (``sac``) that its
validation days chose (figures: docs/results-36bus.md). :func:`deployed_checked` and :func:`deployed_plain` give the
:class:`~ace_core.agents.spec.AgentSpec` of a run's policy as deployed on a grid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ace_core.agents.spec import AgentSpec

DEPLOYED_CHECK: dict[str, Any] = {"k": 50, "stop": 0.95, "expert": True}
"""how the deployed policy is checked (``sac-checked:RUN:50:stop=0.95:expert``) on a grid not
listed below. ``expert`` is the safety net: on a step where none of the policy's 50 most likely
actions (nor doing nothing, nor reconnecting) keeps max rho below ``stop``, the expert's search
goes on from there (within its budget, skipping what was already simulated) instead of playing the
least bad of them. On ordinary days such steps are rare and the net costs almost nothing; under
stress it is what holds the grid (docs/results-stress.md)."""
DEPLOYED_CHECK_BY_GRID: dict[str, dict[str, Any]] = {
    "l2rpn_neurips_2020_track1": {
        "k": 50,
        "stop": 0.9,
        "act": 0.95,
        "expert": True,
        "expert_budget": 30,
        "revert": True,
        "flex": 4,
        "release": 0.85,
    },
    "rte_case14_realistic": {"k": 10, "stop": 0.95, "expert": True, "expert_budget": 10},
}
"""grids whose validation days chose another check: on the 36-bus grid stopping at 0.9 held
0.989 of the bundled validation day where 0.95 held 0.944; on its 18 grown validation days
acting from max rho 0.95 held 0.964 with 0.30 simulations per step where acting from the run's
0.9 held 0.960 with 0.40 (docs/results-imitation.md); and on its stress validation rows a
safety net of 50 simulations held what the expert's full search held (within 0.012) with
about a quarter of the simulations; on its larger stress validation (five grown days) putting a
split substation back on bus 1 on calm steps when that is safe (``revert``, as the expert does)
held 0.541 of the storm's days where the check without it held 0.494 (the expert 0.494), the same
on the other rows, for 0.1-0.4 more simulations per step (docs/results-stress.md); and on the
same days a net that goes beyond topology (``flex=4``: redispatch, curtailment and storage when
its pick leaves max rho at the threshold) held longer in the storm and as long elsewhere, a budget
of 30 as long as 50 with fewer simulations (figures: docs/results-stress.md, "A safety net beyond
topology"); releasing the moves in force below max rho 0.85 (``release=0.85``, as the expert's
validation chose) held as long again, their cost 8-20 % lower (docs/results-stress.md, "Releasing
the moves in force"); on the 14-bus grid the top 10 with a net of 10 simulations held as long on
ordinary days and under line attacks, longer on its heavier validation days taken together (and
longer than the expert at x1.15), with a fifth to a third of the simulations on the heavier rows
(docs/results-stress.md, "The top 10 and a net of 10 on the heavier 14-bus days")"""
DEPLOYED_PLAIN_BY_GRID: dict[str, dict[str, Any]] = {"l2rpn_neurips_2020_track1": {"act": 1.0}}
"""grids whose validation days chose when the plain policy (no simulation) acts: on the 36-bus
grid's 18 grown validation days, from max rho 1.0 it held 0.927 where from the run's 0.9 it held
0.885 (do-nothing 0.901; docs/results-imitation.md); elsewhere it acts from the run's threshold"""


def deployed_checked(env_name: str, path: str | Path) -> AgentSpec:
    """The policy at ``path`` checked by simulation as it is deployed on this grid."""
    return AgentSpec("sac-checked", str(path), **DEPLOYED_CHECK_BY_GRID.get(env_name, DEPLOYED_CHECK))


def deployed_plain(env_name: str, path: str | Path) -> AgentSpec:
    """The policy at ``path`` with no simulation, acting from the max rho this grid's validation
    days chose (the run's own threshold where none was chosen)."""
    return AgentSpec("sac", str(path), **DEPLOYED_PLAIN_BY_GRID.get(env_name, {}))
