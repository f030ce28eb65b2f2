"""How much each unit's injection moves each line's flow: the DC model's transfer factors.

:func:`sensitivities` copies the grid model of grid2op's simulator (LightSim2Grid) at the state's
topology, runs a DC power flow on the copy and reads LightSim2Grid's PTDF (power transfer
distribution factors: MW on each line per MW injected at each bus, against the slack). Each
generator and storage unit gets the column of the bus it is connected to; a move that changes the
total injection is balanced by the redispatchable generators (as grid2op balances it), whose
columns, weighted by their margin up, make the ``balance`` column. About 0.1 ms on the 36-bus grid
after one simulation of doing nothing (which puts the simulator on the state); a line that the
simulated step tripped for an overload past its allowance is put back in service on the copy.

A PTDF is exact for the DC model and close for the AC flows of these grids (within a few MW on
the sandbox and the 36-bus grid); every move it suggests is judged by a full simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ace_core.grid.simulate import simulate_rho


@dataclass(frozen=True)
class Sensitivities:
    """MW on each line's origin side per MW injected, relative to the generators' balancing."""

    gen: np.ndarray
    """(n_line, n_gen); a disconnected generator's column is 0"""
    storage: np.ndarray
    """(n_line, n_storage)"""
    balance: np.ndarray
    """(n_line,): one MW made up by the redispatchable generators"""

    def shift(self, line: int, *, up: int, down: int) -> float:
        """Flow change on ``line`` when generator ``up`` produces one MW more and ``down`` one less."""
        return float(self.gen[line, up] - self.gen[line, down])


def sensitivities(obs, g2op_space) -> Sensitivities | None:
    """The transfer factors at ``obs``'s topology; None when the simulator is not LightSim2Grid's
    or its DC power flow fails (then no continuous move is proposed)."""
    try:
        simulate_rho(obs, g2op_space({}))
        grid = obs._obs_env.backend._grid.copy()
        _reconnect_tripped(grid, obs.line_status)
        grid.dc_pf(np.ones(grid.total_bus(), dtype=complex), 10, 1e-8)
        ptdf = np.asarray(grid.get_ptdf())
        gen_bus = [unit.bus_id for unit in grid.get_generators()]
        storage_bus = [unit.bus_id for unit in grid.get_storages()] if obs.n_storage else []
    except (AttributeError, RuntimeError, IndexError):
        return None
    lines = ptdf[: obs.n_line]
    gen = _columns(lines, gen_bus, obs.n_gen)
    storage = _columns(lines, storage_bus, obs.n_storage)
    margin = np.where(
        obs.gen_redispatchable, np.clip(np.asarray(obs.gen_margin_up, dtype=float), 0, None), 0.0
    )
    if margin.sum() <= 0:
        margin = np.asarray(obs.gen_redispatchable, dtype=float)
    weights = margin / margin.sum() if margin.sum() > 0 else margin
    return Sensitivities(gen, storage, gen @ weights)


def _reconnect_tripped(grid, line_status) -> None:
    """Lines in service in the state that the simulated step tripped (an overload past its
    allowance) go back in service on the copy: the factors are the state's, and a tripped line
    would read as carrying nothing, so no move would be proposed for the line that needs one."""
    line_in = grid.get_lines_status()
    in_copy = [*line_in, *grid.get_trafo_status()]
    lines = len(line_in)
    for line in np.flatnonzero(np.asarray(line_status, dtype=bool) & ~np.asarray(in_copy, dtype=bool)):
        if line < lines:
            grid.reactivate_powerline(int(line))
        else:
            grid.reactivate_trafo(int(line) - lines)


def _columns(lines: np.ndarray, buses: list[int], count: int) -> np.ndarray:
    out = np.zeros((lines.shape[0], count))
    for unit, bus in enumerate(buses[:count]):
        if bus is not None and 0 <= bus < lines.shape[1]:
            out[:, unit] = lines[:, bus]
    return out
