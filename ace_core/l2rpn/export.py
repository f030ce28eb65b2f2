"""Export a run's policy as an L2RPN submission folder that loads without GridACE.

``python -m ace_core export --run DIR --out SUBMISSION`` writes::

    SUBMISSION/
      __init__.py   make_agent(env, this_directory_path), as grid2op/L2RPN expect
      policy.py     the inference code (numpy, torch and grid2op only)
      weights.pt    the actor's state dict
      actions.npz   the action set: reconnections and topology actions as (substation, bus bits)
      agent.json    head, activation threshold, feature scales, the grid it was trained on
      README.md     what the agent does and how to run it

The code files are copied from ``ace_core/l2rpn/submission/``. Everything is written in a hidden
folder beside ``SUBMISSION`` and renamed into place at the end, so a failed export leaves nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

from ace_core.checkpoint import load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import ExportError

SUBMISSION_CODE = Path(__file__).resolve().parent / "submission"
CODE_FILES = ("__init__.py", "policy.py")
FORMAT = "gridace-l2rpn-agent/1"


def export_run(run: Path, out: Path) -> dict:
    """Write the submission for the run (directory or checkpoint file) ``run`` into ``out``
    (new or empty); returns what ``agent.json`` says."""
    out = Path(out)
    _check_target(out)
    state = load_checkpoint(run)
    if state.get("moves"):
        raise ExportError(
            f"{run} also plays continuous moves; the submission's policy plays topology only: "
            "export a policy cloned without --moves"
        )

    from ace_core.agents.sac import load_sac  # grid2op and the env only once the run is known
    from ace_core.grid.envs import make_env

    env = make_env(TrainConfig.from_dict(state["config"]).env)
    sac, space, features, config = load_sac(Path(run), env)
    meta = {
        "format": FORMAT,
        "env": config.env,
        "fingerprint": space.fingerprint(),
        "head": sac.config.head,
        "hidden": int(config.sac.hidden),
        "obs_size": int(features.size),
        "actor_outputs": int(sac.actor.net[-1].out_features),
        "n_actions": int(space.n),
        "rho_threshold": float(config.rho_threshold),
        "load_scale": features.load_scale.tolist(),
        "overflow": features.overflow,
        "trained_steps": int(state["loop"]["step"]),
        "seed": config.seed,
        "grid2op_version": version("grid2op"),
        "torch_version": torch.__version__.split("+")[0],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-", dir=out.parent))
    try:
        for name in CODE_FILES:
            shutil.copyfile(SUBMISSION_CODE / name, staging / name)
        torch.save({k: v.detach().clone() for k, v in sac.actor.state_dict().items()}, staging / "weights.pt")
        np.savez_compressed(
            staging / "actions.npz",
            n_line=np.int64(space.n_line),
            sub_info=space.sub_info.astype(np.int64),
            topo_sub=space.topo_sub.astype(np.int16),
            topo_bits=space.topo_bits.astype(np.uint64),
            line_or_sub=space.line_or_sub.astype(np.int64),
            line_ex_sub=space.line_ex_sub.astype(np.int64),
        )
        (staging / "agent.json").write_text(json.dumps(meta, indent=2) + "\n")
        (staging / "README.md").write_text(agent_readme(meta, space))
        _check_target(out)  # still new or empty: never replace what appeared meanwhile
        if out.exists():
            out.rmdir()
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return meta


def _check_target(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out} is a file; give a new or empty folder for the submission")
    if out.is_dir() and any(out.iterdir()):
        raise ExportError(f"--out {out} is not empty; give a new or empty folder for the submission")


def agent_readme(meta: dict, space) -> str:
    """The submission's README: what the agent does, its files, how to run it."""
    head = {
        "flat": "a flat head: one logit per action, the argmax over the legal ones",
        "factorised": (
            "a factorised head: the most likely top-level choice (do nothing, reconnect line l, "
            "reconfigure substation k) then, for a substation, each element's most likely bus; "
            "when those bits are not a valid topology, the substation's most likely valid one"
        ),
    }[meta["head"]]
    return f"""# GridACE agent for {meta["env"]}

A discrete Soft Actor-Critic policy trained with GridACE for {meta["trained_steps"]:,} environment
steps (seed {meta["seed"]}), exported in the L2RPN submission format. It needs only `numpy`,
`torch` and `grid2op` (tested with grid2op {meta["grid2op_version"]}, torch
{meta["torch_version"]}); LightSim2Grid is recommended as the backend, not required.

## Decisions

- When the largest line loading (max rho) is below **{meta["rho_threshold"]}**, the agent
  reconnects the first disconnected line whose cooldown is over, or does nothing.
- At or above it, the actor network chooses among the **{meta["n_actions"]:,}** actions
  ({space.n_line} line reconnections and {space.n_topology:,} unitary substation topologies, plus
  do nothing) with {head}. Actions on a substation or line in cooldown are never chosen.
- It is greedy and deterministic; no simulation, no LLM at decision time.

## Files

- `__init__.py`: `make_agent(env, this_directory_path)`; refuses an env of another grid.
- `policy.py`: features, action set and the decision rule.
- `weights.pt`: the actor's state dict (`torch.load(..., weights_only=True)`).
- `actions.npz`: the action set. Index 0 does nothing, 1..{space.n_line} reconnect line
  `index - 1`, then topology action `t` sets substation `topo_sub[t]`: element 0 on bus 1 and
  element `j + 1` on bus 2 when bit `j` of `topo_bits[t]` is set, else bus 1.
- `agent.json`: head `{meta["head"]}`, hidden width {meta["hidden"]}, feature size
  {meta["obs_size"]}, the load scale of the features and whether they hold the lines' overflow
  counters, action-space fingerprint
  `{meta["fingerprint"]}`.

## Run it

```python
import grid2op
from grid2op.Runner import Runner
from lightsim2grid import LightSimBackend
import submission  # this folder, on sys.path under any name

env = grid2op.make("{meta["env"]}", backend=LightSimBackend())
agent = submission.make_agent(env, "path/to/submission")
Runner(**env.get_params_for_runner(), agentClass=None, agentInstance=agent).run(nb_episode=1)
```
"""
