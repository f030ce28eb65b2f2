"""How fast SAC learns with torch's kernels as pinned (``ace_core.kernels``) and with another pick:
gradient updates of the env's default network on a full replay buffer, one thread, one JSON line.
Run it under each setting, paired, to compare them on a noisy machine:

    farm-bench -n 5 --vs "env ATEN_CPU_CAPABILITY=avx512 .venv/bin/python bench/cpu_kernels.py" -- .venv/bin/python bench/cpu_kernels.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ace_core.config import TrainConfig  # noqa: E402  (importing ace_core pins the kernels before any op)
from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.grid.features import FeatureBuilder  # noqa: E402
from ace_core.rl.buffer import ReplayBuffer, Transition  # noqa: E402
from ace_core.rl.sac import SAC  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="l2rpn_case14_sandbox")
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = make_env(args.env)
    space, features = build_action_space(env), FeatureBuilder(env)
    config = TrainConfig(env=args.env)
    sac = SAC(features.size, space, config.sac)
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(2048, features.size, space.n_top)
    legal = np.ones(space.n_top, dtype=bool)
    for _ in range(buffer.capacity):
        obs = rng.standard_normal(features.size).astype(np.float32)
        buffer.add(Transition(obs, legal, int(rng.integers(space.n)), 0.5, obs, legal, False, 0.99, 0.5))
    started = time.perf_counter()
    for _ in range(args.updates):
        sac.update(buffer.sample(config.batch_size, rng))
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "env": args.env,
                "kernels": torch.backends.cpu.get_cpu_capability(),
                "updates": args.updates,
                "seconds": round(seconds, 3),
                "updates_per_s": round(args.updates / seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
