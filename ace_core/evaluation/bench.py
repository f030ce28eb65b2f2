"""Performance figures, printed as JSON by ``python -m ace_core bench``.

Everything is measured in one process, one env after the other, and reported both in absolute
units and as ratios to the raw env step measured in the same run (this machine is shared and
noisy; ratios travel better than milliseconds):

- ``env_step_ms`` / ``env_steps_per_s``: do-nothing steps on the train scenarios, resets included;
- ``act_path_ms`` and ``act_path_over_step``: features + legality mask + policy sample, per call;
- ``train_steps_per_s`` and ``train_over_raw``: the training loop with learning on at the
  default update ratio (one gradient step per agent decision), the buffer prefilled so that
  learning runs from the first decision.

The recommendation pipeline's latency (simulation, N-1, look-ahead) has its own benchmark:
``bench/recommend_pipeline.py``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ace_core.config import MAX_STEPS, TrainConfig
from ace_core.extension import TrainerExtension
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.rl.buffer import ReplayBuffer, Transition
from ace_core.rl.exploration import random_legal_action
from ace_core.rl.sac import SAC
from ace_core.training.extensions import extensions_for
from ace_core.training.launch import run
from ace_core.training.setup import RunParts

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
    """(seconds per step, decisions, updates) of the training loop at the default update ratio:
    a run's own loop and timing (its one checkpoint, at the end, included; no metric report)."""
    config = TrainConfig(
        env=name, steps=train_steps, learning_starts=64, log_every=MAX_STEPS, checkpoint_every=MAX_STEPS
    )

    def prefilled(config: TrainConfig, parts: RunParts) -> list[TrainerExtension]:
        return [_Prefill(parts, features, collected, config), *extensions_for(config, parts)]

    with tempfile.TemporaryDirectory() as out:
        result = run(config, Path(out), extensions=prefilled)
    return result.seconds / train_steps, result.decisions, result.updates


class _Prefill(TrainerExtension):
    """Fills the replay buffer with real states and random legal actions before the run starts, so
    that every decision timed also runs a gradient update."""

    def __init__(
        self, parts: RunParts, features: FeatureBuilder, collected: list, config: TrainConfig
    ) -> None:
        self.parts, self.features, self.collected, self.config = parts, features, collected, config

    def replay(self, buffer: ReplayBuffer) -> ReplayBuffer:
        space, collected, features = self.parts.space, self.collected, self.features
        for i in range(self.config.learning_starts):
            o, o_next = collected[i % len(collected)], collected[(i + 1) % len(collected)]
            top = space.top_mask(o)
            buffer.add(
                Transition(
                    features(o),
                    top,
                    random_legal_action(space, self.parts.rng, top),
                    0.0,
                    features(o_next),
                    space.top_mask(o_next),
                    False,
                    self.config.sac.gamma,
                    0.0,
                )
            )
        return buffer
