"""Decision time per step of an exported L2RPN agent against GridACE's own SAC agent, both inside
grid2op's Runner on the same episode.

For each env it makes a run whose checkpoint holds untrained weights (speed, not quality, is
measured: the code path is a trained policy's), with the activation threshold at 0 so that every
step is a policy decision (the worst case; with the default 0.9 most steps only check for a
reconnection), exports it, and times ``act`` of each agent at every step. Prints JSON.

    .venv/bin/python bench/export_decision.py [--steps 200] [--envs l2rpn_case14_sandbox,l2rpn_wcci_2020]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grid2op.Agent import BaseAgent  # noqa: E402
from grid2op.Runner import Runner  # noqa: E402

from ace_core.agents.loading import load_agent  # noqa: E402
from ace_core.config import TrainConfig  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.l2rpn.export import export_run  # noqa: E402
from ace_core.training import run as train_run  # noqa: E402


class Timed(BaseAgent):
    """Times the wrapped agent's ``act``; the Runner's copies share one list."""

    def __init__(self, inner: BaseAgent, seconds: list[float], played: list | None = None) -> None:
        super().__init__(inner.action_space)
        self.inner = inner
        self.seconds = seconds
        self.played = played

    def act(self, observation, reward, done=False):
        start = time.perf_counter()
        action = self.inner.act(observation, reward, done)
        self.seconds.append(time.perf_counter() - start)
        if self.played is not None:  # outside the timed part
            self.played.append((observation.copy(), action))
        return action


def summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "steps": len(ms),
        "mean_ms": round(statistics.fmean(ms), 4),
        "p50_ms": round(ms[len(ms) // 2], 4),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 4),
    }


def play(env, agent: BaseAgent, steps: int, played: list | None = None) -> list[float]:
    """Times ``steps`` decisions over as many Runner episodes as it takes (an untrained policy
    acting at every step ends episodes early), the same episodes and seeds for every agent."""
    seconds: list[float] = []
    timed = Timed(agent, seconds, played)
    runner = Runner(**env.get_params_for_runner(), agentClass=None, agentInstance=timed)
    chronics = len(env.chronics_handler.real_data.subpaths)
    episode = 0
    while len(seconds) < steps:
        runner.run(
            nb_episode=1, max_iter=steps - len(seconds), episode_id=[episode % chronics], env_seeds=[episode]
        )
        episode += 1
    return seconds


def bench_env(name: str, steps: int, folder: Path) -> dict:
    run = folder / name / "run"
    # learning never starts: the checkpoint holds the initial weights, the code path is the same
    config = TrainConfig(env=name, steps=10, learning_starts=1_000_000, rho_threshold=0.0, seed=0)
    train_run(config, run)
    meta = export_run(run, folder / name / "submission")
    sys.path.insert(0, str(folder / name))
    submission = importlib.import_module("submission")
    env = make_env(name)
    exported = submission.make_agent(env, str(folder / name / "submission"))
    gridace = load_agent(f"sac:{run}", env)
    play(env, exported, 5)  # warm both paths (action caches, first allocations)
    play(env, gridace, 5)
    played: list = []
    result = {
        "steps_timed": steps,
        "head": meta["head"],
        "actions": meta["n_actions"],
        "gridace": summary(play(env, gridace, steps)),
        "exported": summary(play(env, exported, steps, played)),
    }
    # the exported agent's action at each observation it saw, against GridACE's on the same one
    same = [gridace.space.index_of_grid2op(action) == gridace.choose(obs) for obs, action in played]
    result["same_decisions"] = f"{sum(same)}/{len(same)}"
    sys.path.remove(str(folder / name))
    del sys.modules["submission"], sys.modules["submission.policy"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--envs", default="l2rpn_case14_sandbox,l2rpn_wcci_2020")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp(prefix="gridace-export-bench-"))
    results = {name: bench_env(name, args.steps, folder) for name in args.envs.split(",")}
    print(json.dumps({"rho_threshold": 0.0, "torch_threads": 1, "envs": results}, indent=2))


if __name__ == "__main__":
    main()
