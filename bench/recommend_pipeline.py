"""Latency of the full recommendation pipeline (``ace_core.recommend.pipeline.RecommendationPipeline``).

Per env: the env is made with one hour of perfect forecasts built from its chronics (12 steps),
a policy with random weights proposes its 5 most likely actions (speed, not quality, is measured:
the code path is a trained policy's), the expert its best 4 of 16, which with doing nothing makes
10 candidates; each is simulated one step ahead and screened for N-1 over every line, and doing
nothing and the best 3 are looked ahead 12 steps. The env steps doing nothing through its
training days and the pipeline runs on every ``--every``-th state (with the live backend, as the
console does). Printed as JSON, with in the same run:

- ``env_step_ms``: the plain do-nothing ``env.step`` of the same env (the machine is shared and
  noisy: ``p95_over_step`` travels better than milliseconds);
- ``solver_ms``: LightSim2Grid's own time in every power flow of a run (simulator, N-1 and time
  series), and ``p50_over_solver``: how far the pipeline is from the power flows it needs;
- ``stressed``: the same figures over the states at max rho >= 0.9 (more cascades, so more
  look-aheads step by step through grid2op).

- ``flex``: with ``--flex K`` (the pipeline's ``flex`` setting; default its own), the runs where
  no single move cleared the overloads and continuous moves were tried, their count and time.
  ``--demand-scale 1.1`` plays heavier days, where that happens.

    .venv/bin/python bench/recommend_pipeline.py [--runs 200] [--every 3] [--envs a,b] [--flex K] [--demand-scale X]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS_P95_MS = {"l2rpn_case14_sandbox": 40.0, "l2rpn_wcci_2020": 100.0}


def percentiles(values: list[float]) -> dict:
    import numpy as np

    return {
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "max": float(np.max(values)),
    }


def bench_env(name: str, runs: int, every: int, flex: int | None = None, demand_scale: float = 1.0) -> dict:
    import numpy as np
    import torch

    from ace_core.config import TrainConfig
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.features import FeatureBuilder
    from ace_core.grid.forecasts import make_env_with_forecasts
    from ace_core.grid.scenarios import reset_to, scenarios
    from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline
    from ace_core.rl.sac import SAC

    torch.set_num_threads(1)
    env = make_env_with_forecasts(name, "perfect", 12, demand_scale=demand_scale)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    sac = SAC(features.size, space, TrainConfig(env=name).sac)
    config = PipelineConfig(policy_k=5, expert_k=4, expert_budget=16, horizon=12, look_ahead_top=3)
    if flex is not None:
        config = dataclasses.replace(config, flex=flex)
    days = scenarios(env, "train")
    obs = reset_to(env, days[0], 0)
    pipeline = RecommendationPipeline(env, space, config, sac, features)
    noop = env.action_space({})

    totals, solver, step_s, stressed, stressed_solver, counts, parts = [], [], [], [], [], [], {}
    flexed, flex_ms, flex_cards = [], [], 0
    day = 0
    pipeline.run(obs, state_backend=env.backend)  # warm-up: first torch call, caches
    while len(totals) < runs:
        for _ in range(every):
            started = time.perf_counter()
            obs, _, done, _ = env.step(noop)
            step_s.append(time.perf_counter() - started)
            if done:
                day += 1
                obs = reset_to(env, days[day % len(days)], day)
        result = pipeline.run(obs, state_backend=env.backend)
        timings = result.timings_ms
        totals.append(timings["total_ms"])
        solver.append(timings["solver_ms"])
        counts.append(1 + len(result.recommendations) + len(result.rejected))
        for key in ("policy_ms", "simulate_ms", "n1_ms", "look_ahead_ms"):
            parts.setdefault(key, []).append(timings[key])
        if "flex_ms" in timings:
            flexed.append(timings["total_ms"])
            flex_ms.append(timings["flex_ms"])
            flex_cards += sum(1 for c in result.recommendations if getattr(c, "move", None))
        if obs.rho.max() >= 0.9:
            stressed.append(timings["total_ms"])
            stressed_solver.append(timings["solver_ms"])
    step_ms = 1000 * float(np.mean(step_s))
    total = percentiles(totals)
    out = {
        "env": name,
        "lines": env.n_line,
        "runs": len(totals),
        "candidates_mean": float(np.mean(counts)),
        "horizon": config.horizon,
        "demand_scale": demand_scale,
        "flex_setting": config.flex,
        "forecast": result.forecast["kind"],
        "env_step_ms": step_ms,
        "pipeline_ms": total,
        "p95_over_step": total["p95"] / step_ms,
        "target_p95_ms": TARGETS_P95_MS.get(name),
        "meets_target": name in TARGETS_P95_MS and total["p95"] <= TARGETS_P95_MS[name],
        "solver_ms": percentiles(solver),
        "p50_over_solver": total["p50"] / float(np.percentile(solver, 50)),
        "parts_ms_p50": {key: float(np.percentile(values, 50)) for key, values in parts.items()},
    }
    if stressed:
        out["stressed"] = {
            "runs": len(stressed),
            "pipeline_ms": percentiles(stressed),
            "solver_ms": percentiles(stressed_solver),
        }
    if flexed:
        out["flex"] = {
            "runs": len(flexed),
            "pipeline_ms": percentiles(flexed),
            "flex_stage_ms": percentiles(flex_ms),
            "continuous_cards_shown": flex_cards,
        }
    env.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--every", type=int, default=3, help="env steps between two pipeline runs")
    parser.add_argument("--envs", default="l2rpn_case14_sandbox,l2rpn_wcci_2020")
    parser.add_argument(
        "--flex", type=int, default=None, help="continuous moves tried (default: the pipeline's)"
    )
    parser.add_argument("--demand-scale", type=float, default=1.0, help="every load and production x this")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    results = [
        bench_env(name, args.runs, args.every, args.flex, args.demand_scale) for name in args.envs.split(",")
    ]
    print(json.dumps({"torch_threads": 1, "results": results}, indent=2))


if __name__ == "__main__":
    main()
