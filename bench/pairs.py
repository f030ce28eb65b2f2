"""How often a pair of moves rescues a step no single move rescues, and what pairs cost the
recommendation pipeline (:mod:`ace_core.recommend.pairs`).

Live grids (the console's envs, one hour of forecasts) are played through whole days by the
console's first card (doing nothing when there is none), optionally on heavier days; at every
step the pipeline runs as the console's does (no policy here: the default move and the expert's
candidates). Printed as JSON per grid:

- ``steps_in_trouble``: steps where doing nothing leaves a line overloaded (or fails);
- ``no_single_clears``: of those, the steps where no single card clears every overload (pairs are
  tried there);
- ``pair_rescues``: of those, the steps where a pair clears every overload one step ahead, and
  ``pair_shown``: where a pair is among the cards (safer than doing nothing, clearing or not);
- ``pipeline_ms``: the pipeline's p50 / p95 over every step, and over the steps that tried pairs;
  ``pairs_ms``: the pairs' share there.

    .venv/bin/python bench/pairs.py [--envs rte_case14_realistic,l2rpn_neurips_2020_track1]
        [--split test] [--days 3] [--demand-scale 1.1] [--opponent storm]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.demand import check_demand_scale  # noqa: E402
from ace_core.grid.scenarios import split_of  # noqa: E402
from ace_core.live.envs import live_scenarios  # noqa: E402
from ace_core.live.recommendations import live_pipeline, make_live_env  # noqa: E402
from ace_core.recommend.pairs import clears_everything  # noqa: E402


def spread(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None}
    return {
        "p50": round(float(np.percentile(values, 50)), 1),
        "p95": round(float(np.percentile(values, 95)), 1),
    }


def play(env_name: str, split: str, days: int, scale: float, opponent: str) -> dict:
    env = make_live_env(env_name, demand_scale=scale, opponent=opponent)
    space = build_action_space(env)
    everything = live_scenarios(env)
    chosen = [i for i in range(len(everything)) if split_of(i, len(everything)) == split][:days]
    counts = dict(steps=0, steps_in_trouble=0, no_single_clears=0, pair_rescues=0, pair_shown=0)
    total_ms, paired_ms, pairs_ms = [], [], []
    for index in chosen:
        scenario = everything[index]
        obs = env.reset(seed=0, options=scenario.reset_options())
        pipeline = live_pipeline(env, space)
        done, step = False, 0
        while not done and step < scenario.length - 1:
            result = pipeline.run(obs, state_backend=env.backend)
            counts["steps"] += 1
            total_ms.append(result.timings_ms["total_ms"])
            reference = result.reference
            if reference.failed or reference.outcome.overloads_after:
                counts["steps_in_trouble"] += 1
            if "pairs_ms" in result.timings_ms:
                counts["no_single_clears"] += 1
                paired_ms.append(result.timings_ms["total_ms"])
                pairs_ms.append(result.timings_ms["pairs_ms"])
                pairs = [c for c in result.recommendations if c.parts]
                counts["pair_shown"] += bool(pairs)
                counts["pair_rescues"] += any(clears_everything(c) for c in pairs)
            best = result.recommendations[0] if result.recommendations else None
            if best is not None and best.parts:
                action = space.to_grid2op(best.parts[0], env.action_space) + space.to_grid2op(
                    best.parts[1], env.action_space
                )
            elif best is not None:
                action = space.to_grid2op(best.action_index, env.action_space)
            else:
                action = env.action_space({})
            obs, _, done, _ = env.step(action)
            step += 1
    env.close()
    return {
        "env": env_name,
        "split": split,
        "days": len(chosen),
        "demand_scale": scale,
        "opponent": opponent,
        **counts,
        "pipeline_ms": spread(total_ms),
        "pipeline_ms_when_pairs_tried": spread(paired_ms),
        "pairs_ms": spread(pairs_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="rte_case14_realistic,l2rpn_neurips_2020_track1")
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--demand-scale", type=float, default=1.1)
    parser.add_argument(
        "--opponent", default="env", help="line attacks (ace_core.grid.opponents), e.g. storm"
    )
    args = parser.parse_args()
    scale = check_demand_scale(args.demand_scale)
    for env_name in args.envs.split(","):
        print(json.dumps(play(env_name, args.split, args.days, scale, args.opponent)), flush=True)


if __name__ == "__main__":
    main()
