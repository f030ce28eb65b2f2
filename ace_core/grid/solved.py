"""A solved grid state, frozen: what N-1 screening and look-ahead start from.

The simulator's LightSim2Grid backend holds a candidate's post-action grid only until the next
candidate is simulated. :class:`SolvedGrid` keeps a copy of LightSim2Grid's grid model (~0.02 ms
on the 36-substation grid) with its solved voltages, line status and thermal limits, so that
the screening can run after every candidate has been simulated, and only for those worth it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SolvedGrid:
    grid: object
    """a copy of the backend's ``LSGrid`` (topology, injections, solver settings)"""
    V: np.ndarray
    """complex bus voltages of the solved power flow (the start of every further solve)"""
    line_status: np.ndarray
    thermal_limit: np.ndarray
    rho: np.ndarray
    max_it: int
    tol: float
    injection_buses: np.ndarray
    """grid-model buses holding a connected load, generator or storage unit"""

    @classmethod
    def of(cls, backend) -> SolvedGrid:
        """The state a LightSimBackend holds after a converged power flow."""
        return cls(
            grid=backend._grid.copy(),
            V=np.array(backend.V, copy=True),
            line_status=np.array(backend.get_line_status(), dtype=bool),
            thermal_limit=np.array(backend.get_thermal_limit(), dtype=float),
            rho=np.array(backend.get_relative_flow(), dtype=float),
            max_it=int(backend.max_it),
            tol=float(backend.tol),
            injection_buses=_injection_buses(backend),
        )


def _injection_buses(backend) -> np.ndarray:
    """LightSim2Grid numbers bus ``b`` (1 or 2) of substation ``s`` as ``s + (b - 1) * n_sub``."""
    cls = type(backend)
    topo = np.asarray(backend.get_topo_vect())
    buses = []
    for positions, subs in (
        (cls.load_pos_topo_vect, cls.load_to_subid),
        (cls.gen_pos_topo_vect, cls.gen_to_subid),
        (cls.storage_pos_topo_vect, cls.storage_to_subid),
    ):
        bus = topo[positions]
        connected = bus > 0
        buses.append((subs + (bus - 1) * cls.n_sub)[connected])
    return np.unique(np.concatenate(buses)).astype(np.int64)
