"""How each grid's trained policy is deployed: the check it is played with (``sac-checked``, with
the expert's search as its safety net) and the options of the plain policy (``sac``) that its
validation days chose. :func:`deployed_checked` and :func:`deployed_plain` give the
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
    "l2rpn_idf_2023": {"k": 50, "stop": 0.95, "expert": True, "expert_budget": 30},
}
"""grids whose validation days chose another check; what each option held against the others
is in the results pages, not here:

- ``l2rpn_neurips_2020_track1``: stop at max rho 0.9 and act from 0.95
  (docs/results-imitation.md); a safety net of 30 simulations, as long as the full search with
  fewer; ``revert``, calm steps back on bus 1, longer in the storm; ``flex=4``, a net that
  redispatches, curtails and uses storage, longer in the storm; ``release=0.85``, its moves
  released below max rho 0.85, as long and cheaper (docs/results-stress.md, "A safety net beyond
  topology" and "Releasing the moves in force");
- ``rte_case14_realistic``: the top 10 with a net of 10 simulations, as long on ordinary days and
  under line attacks, longer on the heavier three-day days taken together than the top 50 with
  the full net, with far fewer simulations (docs/results-stress.md, "The heavier 14-bus rows
  again, on days the policies never learned from");
- ``l2rpn_idf_2023``: a safety net of 30 simulations, as long as the full search within the
  clones' spread, with a ninth of its simulations (docs/results-118bus.md, "A net of 30 for the
  118-bus check")."""
DEPLOYED_PLAIN_BY_GRID: dict[str, dict[str, Any]] = {"l2rpn_neurips_2020_track1": {"act": 1.0}}
"""grids whose validation days chose when the plain policy (no simulation) acts: on the 36-bus
grid from max rho 1.0, longer than from the run's 0.9 (docs/results-imitation.md); elsewhere it
acts from the run's threshold"""


def deployed_checked(env_name: str, path: str | Path) -> AgentSpec:
    """The policy at ``path`` checked by simulation as it is deployed on this grid."""
    return AgentSpec("sac-checked", str(path), **DEPLOYED_CHECK_BY_GRID.get(env_name, DEPLOYED_CHECK))


def deployed_plain(env_name: str, path: str | Path) -> AgentSpec:
    """The policy at ``path`` with no simulation, acting from the max rho this grid's validation
    days chose (the run's own threshold where none was chosen)."""
    return AgentSpec("sac", str(path), **DEPLOYED_PLAIN_BY_GRID.get(env_name, {}))
