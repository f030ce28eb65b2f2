"""Observations frozen to bytes and thawed back, still able to ``simulate``.

The LLM actor re-simulates past decisions long after the env has moved on, and checkpoints must
carry those decisions so a resumed run is identical to an uninterrupted one. A grid2op
observation holds everything ``obs.simulate`` needs (state, forecasts, the env's internal
parameters), plus references to objects it shares with its env: the simulator (``_obs_env``),
the action helper and a random generator. :func:`freeze_obs` pickles the observation without
those shared references (~25 KB on a 14-bus grid); :func:`thaw_obs` reattaches the ones of a
live env of the same grid. Simulating a thawed observation gives the same result as simulating
the original (checked in the tests).
"""

from __future__ import annotations

import pickle

# attributes that point at objects owned by the env (the simulator, helpers), not the state
_SHARED = ("random_prng", "_BaseObservation__kwargs", "action_helper", "_obs_env", "_ptr_kwargs_env")


def freeze_obs(obs) -> bytes:
    """The observation as bytes, without the env objects it shares."""
    saved = {name: getattr(obs, name, None) for name in _SHARED}
    try:
        for name in _SHARED:
            setattr(obs, name, None)
        return pickle.dumps(obs, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        for name, value in saved.items():
            setattr(obs, name, value)


def thaw_obs(data: bytes, env):
    """An observation from :func:`freeze_obs`, attached to ``env`` (same grid) so it can simulate."""
    obs = pickle.loads(data)
    reference = env.get_obs()
    for name in _SHARED:
        setattr(obs, name, getattr(reference, name, None))
    return obs
