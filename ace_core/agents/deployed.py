"""How each grid's trained policy is deployed: the check (``sac-checked:RUN:<check>``) and the plain
options its validation days chose (figures: docs/results-36bus.md)."""

from __future__ import annotations

DEPLOYED_CHECK = "50:stop=0.95"
"""how the deployed policy is checked (``sac-checked:RUN:<this>``) on a grid not listed below"""
DEPLOYED_CHECK_BY_GRID = {"l2rpn_neurips_2020_track1": "50:stop=0.9:act=0.95"}
"""grids whose validation days chose another check: on the 36-bus grid stopping at 0.9 held
0.989 of the bundled validation day where 0.95 held 0.944, and on its 18 grown validation days
acting from max rho 0.95 held 0.964 with 0.30 simulations per step where acting from the run's
0.9 held 0.960 with 0.40 (docs/results-imitation.md)"""
DEPLOYED_PLAIN_BY_GRID = {"l2rpn_neurips_2020_track1": "act=1.0"}
"""grids whose validation days chose when the plain policy (no simulation) acts: on the 36-bus
grid's 18 grown validation days, from max rho 1.0 it held 0.927 where from the run's 0.9 it held
0.885 (do-nothing 0.901; docs/results-imitation.md)"""


def deployed_check(env_name: str) -> str:
    """The ``K[:stop=R][:act=R]`` part of ``sac-checked`` that this grid's policy is deployed with."""
    return DEPLOYED_CHECK_BY_GRID.get(env_name, DEPLOYED_CHECK)


def deployed_plain(env_name: str) -> str:
    """The options of ``sac`` (``act=R``, or nothing: the run's threshold) that this grid's plain
    policy is shown with."""
    return DEPLOYED_PLAIN_BY_GRID.get(env_name, "")
