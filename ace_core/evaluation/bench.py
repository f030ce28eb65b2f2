"""Performance figures, printed as JSON by ``python -m ace_core bench``.

Everything is measured in one process, one env after the other, and reported both in absolute
units and as ratios to the raw env step measured in the same run (this machine is shared and
noisy; ratios travel better than milliseconds):

- ``env_step_ms`` / ``env_steps_per_s``: do-nothing steps on the train scenarios, resets included;
- ``act_path_ms`` and ``act_path_over_step``: features + legality mask + policy sample, per call;
- ``train_steps_per_s`` and ``train_over_raw``: the training loop with learning on at the
  default update ratio (one gradient step per agent decision), the buffer prefilled so that
  learning runs from the first decision;
- ``recommend_ms_p50`` / ``p95`` and ``recommend_p95_over_step``: policy top-10 plus a one-step
  simulation of each (``simulate_many``), over the 50 most stressed states;
  ``recommend_with_fallback_ms_p95`` adds the greedy expert's 32 candidates when none of the ten
  clears an overload, as the live console does. The policy has random weights, so its candidates
  are worse (more cascades to simulate in full, more fallbacks) than a trained policy's.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ace_core.config import TrainConfig
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.recommend.pipeline import recommend
from ace_core.rl.buffer import Transition
from ace_core.rl.sac import SAC
from ace_core.training.trainer import Trainer

DEFAULT_ENVS = ("l2rpn_case14_sandbox", "l2rpn_wcci_2020")


def bench_env(name: str, quick: bool = False) -> dict:
    torch.set_num_threads(1)
    env = make_env(name)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    collected, step_s = _env_steps(env, 300 if quick else 3000)
    sac = SAC(features.size, space, TrainConfig(env=name).sac)
    act_s = _act_path(sac, features, space, collected, 200 if quick else 2000)
    train_steps = 500 if quick else 4000
    train_s, decisions, updates = _training(name, features, collected, train_steps)
    # recommendations on the most stressed collected states
    stressed = sorted(collected, key=lambda o: -float(o.rho.max()))[: 10 if quick else 50]
    timings = [
        recommend(o, sac, space, features, env.action_space, k=10, greedy_budget=0)[1]["total_ms"]
        for o in stressed
    ]
    with_fallback = [
        recommend(o, sac, space, features, env.action_space, k=10)[1]["total_ms"] for o in stressed
    ]
    return {
        "env": name,
        "actions": space.n,
        "head": sac.config.head,
        "env_step_ms": step_s * 1000,
        "env_steps_per_s": 1 / step_s,
        "act_path_ms": act_s * 1000,
        "act_path_over_step": act_s / step_s,
        "train_steps_per_s": 1 / train_s,
        "train_over_raw": step_s / train_s,
        "train_decision_fraction": decisions / train_steps,
        "train_decisions": decisions,
        "train_updates": updates,
        "recommend_k": 10,
        "recommend_ms_p50": float(np.percentile(timings, 50)),
        "recommend_ms_p95": float(np.percentile(timings, 95)),
        "recommend_p95_over_step": float(np.percentile(timings, 95)) / (step_s * 1000),
        "recommend_with_fallback_ms_p95": float(np.percentile(with_fallback, 95)),
    }


def run_benchmarks(envs: list[str] | None = None, quick: bool = False) -> dict:
    return {"torch_threads": 1, "results": [bench_env(name, quick) for name in (envs or DEFAULT_ENVS)]}


def _env_steps(env, n_steps: int) -> tuple[list, float]:
    """Raw do-nothing steps on the train scenarios, resets included: every 10th observation, and
    the seconds per step."""
    train_scenarios = scenarios(env, "train")
    collected = []
    obs = reset_to(env, train_scenarios[0], 0)
    noop = env.action_space({})
    episode = 0
    started = time.perf_counter()
    for i in range(n_steps):
        obs, _, done, _ = env.step(noop)
        if i % 10 == 0:
            collected.append(obs)
        if done:
            episode += 1
            obs = reset_to(env, train_scenarios[episode % len(train_scenarios)], episode)
    return collected, (time.perf_counter() - started) / n_steps


def _act_path(sac: SAC, features: FeatureBuilder, space, collected: list, n_act: int) -> float:
    """Seconds per features + legality mask + policy sample."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for i in range(n_act):
        o = collected[i % len(collected)]
        sac.act(features(o), space.top_mask(o), rng)
    return (time.perf_counter() - started) / n_act


def _training(
    name: str, features: FeatureBuilder, collected: list, train_steps: int
) -> tuple[float, int, int]:
    """(seconds per step, decisions, updates) of the training loop at the default update ratio."""
    config = TrainConfig(
        env=name, steps=train_steps, learning_starts=64, log_every=train_steps, checkpoint_every=10**8
    )
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, Path(out))
        # prefill with real states and random actions so that every decision timed below
        # also runs a gradient update
        for i in range(config.learning_starts):
            o, o_next = collected[i % len(collected)], collected[(i + 1) % len(collected)]
            top = trainer.space.top_mask(o)
            trainer.buffer.add(
                Transition(
                    features(o),
                    top,
                    trainer._random_legal_action(top),
                    0.0,
                    features(o_next),
                    trainer.space.top_mask(o_next),
                    False,
                    config.sac.gamma,
                    0.0,
                )
            )
        trainer._start_episode()
        started = time.perf_counter()
        while trainer.step < train_steps:
            trainer._one_step()
        return (time.perf_counter() - started) / train_steps, trainer.decisions, trainer.sac.updates
