"""One-step-ahead simulation without the copy of the simulated observation.

``obs.simulate(action)`` spends about a quarter of its time deep-copying the observation it
returns (3.0 -> 2.3 ms on the 14-bus grid, 5.2 -> 4.0 ms on the 36-bus grid, measured here).
Recommendations and the greedy expert only need rho and the outcome, so :func:`simulate_rho`
performs the same steps as grid2op 1.12's ``BaseObservation.simulate`` (forecast injections,
``_obs_env.init``, ``_obs_env.simulate``) and reads rho from the simulator's own observation.
The test suite checks it against ``obs.simulate`` on many actions; if grid2op's internals change
it falls back to the public method.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Simulated(NamedTuple):
    rho: np.ndarray
    reward: float
    done: bool
    info: dict


def simulate_rho(obs, action, time_step: int = 1) -> Simulated:
    try:
        forecasts = obs._forecasted_grid_act
        if time_step not in forecasts:
            timestamp, injections = obs._forecasted_inj[time_step]
            forecasts[time_step] = {"timestamp": timestamp, "inj_action": obs.action_helper(injections)}
        forecast = forecasts[time_step]
        obs._obs_env.init(
            forecast["inj_action"], time_stamp=forecast["timestamp"], obs=obs, time_step=time_step
        )
        sim_obs, reward, done, info = obs._obs_env.simulate(action)
    except (AttributeError, KeyError, TypeError):
        sim_obs, reward, done, info = obs.simulate(action, time_step=time_step)
    return Simulated(np.array(sim_obs.rho, copy=True), float(reward), bool(done), info)
