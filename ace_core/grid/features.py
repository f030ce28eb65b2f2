"""The observation as a fixed-size, normalised feature vector (the policy's input).

Layout, for a grid with L lines, E topology elements, G generators, D loads and S substations
(size ``5L + E + G + D + S + 3``; 191 on l2rpn_case14_sandbox, 570 on l2rpn_wcci_2020):

==========================  =====  ===============================================
block                       size   value
==========================  =====  ===============================================
rho                         L      flow / thermal limit, clipped to [0, 2]
line status                 L      1 connected, 0 disconnected
line cooldown               L      steps before it may be switched / max cooldown, [0, 1]
maintenance                 L      1 in maintenance, ramps 0..1 over the 12 steps before one
bus 2                       E      1 when the element is on bus 2
generator output            G      p / pmax, [-1, 1]
load                        D      p / (1.5 x its value at the first step the policy saw), [0, 2]
substation cooldown         S      steps before it may be changed / max cooldown, [0, 1]
time                        3      sin and cos of the time of day, day of week / 6
overflow                    L      steps the line has been over its limit / steps allowed, [0, 1]
==========================  =====  ===============================================

The overflow block is what tells a line about to trip from one that has just crossed its limit
(grid2op disconnects a line over its limit for ``NB_TIMESTEP_OVERFLOW_ALLOWED`` steps running, 2
on the bundled grids): the expert sees it in its simulations, and without it the policy saw the
step where waiting is fatal as the one before, where waiting is right. Policies trained before it
existed have no such block (``overflow=False``, kept in their checkpoints and mines).

The load scale is part of the policy: a training run takes it from its env's first observation
and saves it in its checkpoints (:meth:`FeatureBuilder.state_dict`), and whoever loads the policy
passes it back, so the policy sees the same normalisation whatever state the env it acts on is in;
so is whether it reads the overflow block.
"""

from __future__ import annotations

import numpy as np

MAINTENANCE_HORIZON = 12


class FeatureBuilder:
    def __init__(self, env, load_scale=None, overflow: bool = True) -> None:
        self.gen_pmax = np.maximum(np.asarray(env.gen_pmax, dtype=np.float32), 1e-3)
        params = env.parameters
        self.line_cooldown = float(max(params.NB_TIMESTEP_COOLDOWN_LINE, params.NB_TIMESTEP_RECONNECTION, 1))
        self.sub_cooldown = float(max(params.NB_TIMESTEP_COOLDOWN_SUB, 1))
        self.overflow_allowed = float(max(params.NB_TIMESTEP_OVERFLOW_ALLOWED, 1))
        self.overflow = bool(overflow)
        if load_scale is None:
            reference = env.get_obs() if env.current_obs is not None else env.reset()
            load_scale = 1.5 * np.abs(reference.load_p)
        load_scale = np.asarray(load_scale, dtype=np.float32)
        if load_scale.shape != (env.n_load,):
            raise ValueError(f"load_scale has shape {load_scale.shape}; this env has {env.n_load} loads")
        self.load_scale = np.maximum(load_scale, 1e-3)
        self.size = 4 * env.n_line + env.dim_topo + env.n_gen + env.n_load + env.n_sub + 3
        self.size += env.n_line if self.overflow else 0

    def state_dict(self) -> dict:
        return {"load_scale": self.load_scale.tolist(), "overflow": self.overflow}

    def load_state_dict(self, state: dict) -> None:
        """Take a policy's feature scale in place, so that whoever holds this builder sees it; the
        policy must read the same blocks (a network's input size cannot change)."""
        load_scale = np.asarray(state["load_scale"], dtype=np.float32)
        if load_scale.shape != self.load_scale.shape:
            raise ValueError(f"load_scale has shape {load_scale.shape}; this env has {self.load_scale.shape}")
        if bool(state.get("overflow", False)) != self.overflow:
            raise ValueError(
                f"the policy {'reads' if state.get('overflow') else 'does not read'} the overflow block "
                f"and these features {'do' if self.overflow else 'do not'}"
            )
        self.load_scale = np.maximum(load_scale, 1e-3)

    @classmethod
    def for_policy(cls, env, state: dict) -> FeatureBuilder:
        """The features a checkpoint's policy was trained on (older checkpoints: from ``env``)."""
        return cls.from_state(env, state.get("features", {}))

    @classmethod
    def from_state(cls, env, features: dict) -> FeatureBuilder:
        """The features of a :meth:`state_dict` (an empty one: from ``env``, without overflow)."""
        return cls(env, load_scale=features.get("load_scale"), overflow=features.get("overflow", False))

    def __call__(self, obs) -> np.ndarray:
        maintenance_in = obs.time_next_maintenance
        soon = (maintenance_in > 0) & (maintenance_in <= MAINTENANCE_HORIZON)
        maintenance = np.where(soon, 1.0 - maintenance_in / MAINTENANCE_HORIZON, 0.0)
        maintenance[(maintenance_in == 0) & (obs.duration_next_maintenance > 0)] = 1.0
        minutes = obs.hour_of_day * 60 + obs.minute_of_hour
        angle = 2 * np.pi * minutes / 1440.0
        return np.concatenate(
            [
                np.clip(obs.rho, 0.0, 2.0),
                obs.line_status,
                np.minimum(obs.time_before_cooldown_line / self.line_cooldown, 1.0),
                maintenance,
                obs.topo_vect == 2,
                np.clip(obs.gen_p / self.gen_pmax, -1.0, 1.0),
                np.clip(obs.load_p / self.load_scale, 0.0, 2.0),
                np.minimum(obs.time_before_cooldown_sub / self.sub_cooldown, 1.0),
                [np.sin(angle), np.cos(angle), obs.day_of_week / 6.0],
                np.minimum(obs.timestep_overflow / self.overflow_allowed, 1.0) if self.overflow else [],
            ],
            dtype=np.float32,
        )
