"""Random legal actions for exploration: the trainer's random decisions and the core benchmarks."""

from __future__ import annotations

import numpy as np

from ace_core.grid.action_space import ActionSpace


def random_legal_action(space: ActionSpace, rng: np.random.Generator, top_mask: np.ndarray) -> int:
    """Uniform over legal top-level choices, then uniform among that substation's topologies
    (uniform over all 66,810 would nearly always pick the one 17-element substation)."""
    top = int(rng.choice(np.flatnonzero(top_mask)))
    sub = space.top_sub[top]
    if sub < 0:
        return int(space.top_action[top])
    rows = np.flatnonzero(space.topo_sub == sub)
    return space.first_topology + int(rng.choice(rows))
