"""A GridACE agent in the L2RPN submission format: ``make_agent(env, this_directory_path)``.

Needs numpy, torch and grid2op only (see README.md beside this file). The folder holds
``weights.pt`` (the actor's state dict), ``actions.npz`` (the action set), ``agent.json`` (the
decision settings and the grid it was trained on) and ``policy.py`` (the inference code).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from .policy import ActionSet, Actor, ExportedAgent, Features

FORMAT = "gridace-l2rpn-agent/1"


def make_agent(env, this_directory_path):
    """The agent for ``env`` (a grid2op environment of the grid the policy was trained on)."""
    folder = Path(this_directory_path)
    meta = json.loads((folder / "agent.json").read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{folder} holds agent format {meta.get('format')!r}; this code reads {FORMAT!r}")
    with np.load(folder / "actions.npz") as data:
        arrays = {key: data[key] for key in data.files}
    _check_grid(env, meta, arrays)
    actor = Actor(meta["obs_size"], meta["hidden"], meta["actor_outputs"])
    actor.load_state_dict(torch.load(folder / "weights.pt", map_location="cpu", weights_only=True))
    return ExportedAgent(
        env,
        actor,
        ActionSet(arrays, env),
        Features(env, np.asarray(meta["load_scale"], dtype=np.float32), bool(meta.get("overflow", False))),
        head=meta["head"],
        rho_threshold=float(meta["rho_threshold"]),
    )


def _check_grid(env, meta: dict, arrays: dict) -> None:
    """Refuse another grid: the weights only make sense on the one they were trained on."""
    found = {"n_line": int(env.n_line), "sub_info": [int(x) for x in env.sub_info], "n_load": int(env.n_load)}
    expected = {
        "n_line": int(arrays["n_line"]),
        "sub_info": arrays["sub_info"].tolist(),
        "n_load": len(meta["load_scale"]),
    }
    if found != expected:
        raise ValueError(
            f"this agent was trained on {meta['env']} ({expected['n_line']} lines, "
            f"{len(expected['sub_info'])} substations); the env given has {found['n_line']} lines and "
            f"{len(found['sub_info'])} substations: use an env of the same grid"
        )
