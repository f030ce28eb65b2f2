"""A run's validation in one process and on 2 (or more) Ray workers: the same figures, the time each.

    nice .venv/bin/python bench/validation_speedup.py --run runs/r14q-s1 [--workers 2] [--repeats 2]

Plays the validation of the run's settings (every copy of its validation days, every grid seed)
with the policy of its ``best.pt``, alternately in this process and on ``workers`` Ray actors
(both with their envs built before the first timed validation, as a run keeps them), and
prints one JSON object: each validation's seconds, the speed-up (one process over the workers,
summed), and whether every validation gave the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.agents.sac import sac_from_state  # noqa: E402
from ace_core.checkpoint import BEST_NAME, load_checkpoint  # noqa: E402
from ace_core.config import TrainConfig  # noqa: E402
from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.training.setup import validator_for  # noqa: E402
from ace_core.workers import Workers  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="a run directory with best.pt")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    path = Path(args.run) / BEST_NAME
    state = load_checkpoint(path)
    config = TrainConfig.from_dict(state["config"])
    env = make_env(config.env)
    sac, space, features, _ = sac_from_state(state, env, build_action_space(env), str(path))
    here, on_ray = (validator_for(config, env, space, Workers(n)) for n in (1, args.workers))
    reference = on_ray(sac, features, 0, 0)  # the actors up and their envs built
    here(sac, features, 0, 0)  # this process's envs built, as a run keeps them
    seconds: dict[str, list[float]] = {"one_process": [], "workers": []}
    same = True
    try:
        for _ in range(args.repeats):
            for name, validator in (("one_process", here), ("workers", on_ray)):
                started = time.perf_counter()
                same &= validator(sac, features, 0, 0) == reference
                seconds[name].append(time.perf_counter() - started)
    finally:
        here.close()
        on_ray.close()
    print(
        json.dumps(
            {
                "run": args.run,
                "workers": args.workers,
                "seconds": seconds,
                "speedup": sum(seconds["one_process"]) / sum(seconds["workers"]),
                "same_figures": bool(same),
                "survival": reference.survival,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
