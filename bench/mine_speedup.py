"""Mining speed with 1 and 2 (or more) Ray worker processes: the same mine, from scratch each time.

    nice .venv/bin/python bench/mine_speedup.py [--env rte_case14_realistic] [--episodes 8] \
        [--seeds 1] [--episode-length 288] [--expert greedy] [--workers 1,2]

Each worker count mines the same train episodes into a fresh directory, Ray started locally with
``num_cpus`` = workers. Prints one JSON object: per worker count the wall time (Ray start and
worker set-up included), the episodes' own playing time summed over workers, decisions and
simulations, and the speed-up of each count over the first; the datasets must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from ace_core.imitation.mining import MineSpec, mine  # noqa: E402
from ace_core.workers import Workers  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=1, help="grid seeds per scenario")
    parser.add_argument("--episode-length", type=int, default=288)
    parser.add_argument("--expert", default="greedy")
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    spec = MineSpec(
        env=args.env,
        expert=args.expert,
        episodes=args.episodes,
        seeds=args.seeds,
        episode_length=args.episode_length,
    )
    rows, actions = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for run, workers in enumerate(int(w) for w in args.workers.split(",")):
            out = Path(tmp) / f"run{run}-w{workers}"  # a fresh mine each time, never the cache
            started = time.perf_counter()
            summary = mine(spec, out, workers=Workers(workers), log=lambda text: None)
            wall = time.perf_counter() - started
            with np.load(out / "dataset.npz") as data:
                actions.append(data["action"].copy())
            rows.append(
                {
                    "workers": workers,
                    "wall_seconds": round(wall, 1),
                    "episode_seconds_summed": round(summary["episode_seconds"], 1),
                    "episodes": summary["episodes"],
                    "decisions": summary["decisions"],
                    "simulations": summary["simulations"],
                }
            )
    for row in rows:
        row["speedup"] = round(rows[0]["wall_seconds"] / row["wall_seconds"], 2)
    same = all(np.array_equal(actions[0], a) for a in actions[1:])
    load = os.getloadavg()[0]
    print(
        json.dumps(
            {"spec": spec.key(), "runs": rows, "identical_datasets": same, "load_average_1min": load},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
