"""grid2op's L2RPN 2020 score, computed offline and kept apart from the installed package.

``grid2op.utils.ScoreL2RPN2020`` runs reference agents (do nothing, and a "no overflow"
reference) and caches their statistics *inside the env folder*, reusing them without checking
seeds or lengths. So we copy the env folder into GridACE's cache, one copy per (env, seeds,
number of scenarios, max steps), and score there. Protocol (grid2op's, not our cut scenarios):
the first ``nb_scenario`` chronics from their start, ``max_step`` steps each, under the env's own
opponent or another one (``opponent``, :mod:`ace_core.grid.opponents`; its own copy of the folder).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from grid2op.utils import ScoreL2RPN2020

from ace_core.agents.loading import load_agent
from ace_core.grid.action_space import cache_dir
from ace_core.grid.envs import env_dir, make_env, open_env_folder
from ace_core.grid.opponents import DEFAULT_OPPONENT, opponent_kwargs

DEFAULT_MAX_STEP = 288


def _writable_env_copy(env_name: str, key: str) -> Path:
    source = env_dir(env_name)
    target = cache_dir() / "score_envs" / f"{env_name}-{key}" / env_name
    if not target.exists():
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp)
        tmp.rename(target)
    return target


def l2rpn_2020_score(
    env_name: str,
    agent_spec: str,
    seeds=(0,),
    nb_scenario: int = 2,
    max_step: int = DEFAULT_MAX_STEP,
    opponent: str = DEFAULT_OPPONENT,
) -> dict:
    """Mean L2RPN 2020 score (0-100, do nothing = 0) and per-scenario scores."""
    probe = make_env(env_name, cache_chronics=False, opponent=opponent)
    nb_scenario = min(nb_scenario, len(probe.chronics_handler.real_data.subpaths))
    env_seeds = [int(seeds[i % len(seeds)]) for i in range(nb_scenario)]
    key = f"s{'-'.join(map(str, env_seeds))}-n{nb_scenario}-m{max_step}"
    if opponent != DEFAULT_OPPONENT:
        key += f"-{opponent}"  # the reference agents' statistics depend on the attacks
    folder = _writable_env_copy(env_name, key)
    env = open_env_folder(folder, **opponent_kwargs(env_name, opponent))
    scorer = ScoreL2RPN2020(
        env, env_seeds=env_seeds, agent_seeds=env_seeds, nb_scenario=nb_scenario, max_step=max_step, verbose=0
    )
    agent = load_agent(agent_spec, env)
    scores, survived, total = scorer.get(agent)
    return {
        "mean": float(np.mean(scores)),
        "per_scenario": [float(s) for s in scores],
        "steps_survived": [int(s) for s in survived],
        "max_steps": [int(t) for t in total],
        "protocol": f"first {nb_scenario} chronics from their start, {max_step} steps, seeds {env_seeds}"
        + (f", opponent {opponent}" if opponent != DEFAULT_OPPONENT else ""),
    }
