"""Evaluation through grid2op's Runner: EpisodeData on disk and a JSON report.

Each scenario of the chosen split runs once per seed with ``Runner.run`` (its own folder, since
the Runner names episode folders by chronic and our scenarios cut one chronic into many), in this
process or on Ray actors (``workers``: :mod:`ace_core.evaluation.episodes`); the
EpisodeData it writes opens with ``grid2op.Episode.EpisodeData.from_disk``. The report gives per
episode steps survived and reward, the mean survival fraction, decision time p50/p95 and simulate
calls (in all and per step), the agent's decisions (steps where max rho reached its threshold)
with the share of them that changed the grid (``real_action_share``: a topology action equal to
the current topology is played as do-nothing and counted in ``folded_noops``), and (``score=True``) grid2op's own L2RPN 2020 score (see :mod:`ace_core.evaluation.score`).

``opponent`` picks the line attacks (:mod:`ace_core.grid.opponents`: ``env``, the env's own;
``none``; ``random-line``; ``storm``, with their settings): the Runner builds its env from
``env.get_params_for_runner()``, so it plays under the same attacks and the same ``demand_scale``
(every load and production multiplied, :mod:`ace_core.grid.demand`), and each episode reports the
attacks it saw (``attacks``, from the Runner's EpisodeData). ``episode_length`` cuts the chronics into episodes of that many steps (288 =
one day; 864 = three days). The report records both, and ``contingency_calls`` for an expert that
screens its candidates for N-1 (``greedy:n1=K``) and ``expert_steps`` for a checked policy that
hands its hardest steps to the expert (``sac-checked:...:expert``).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ace_core.agents.loading import load_agent
from ace_core.agents.spec import AgentSpec
from ace_core.checkpoint import days_learned
from ace_core.errors import ConfigError
from ace_core.evaluation.episodes import (
    EpisodePlayer,
    Job,
    Played,
    merge_stats,
    play_batches_on_ray,
    play_here,
)
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.opponents import DEFAULT_OPPONENT, check_opponent
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario, learned_in, scenarios
from ace_core.workers import HERE, Workers

STEPS_PER_DAY = 288
"""5-minute steps in a day"""

REPORT_NAME = "report.json"


@dataclass
class Evaluation:
    """An evaluation checked and ready to play (:func:`prepare`); nothing played or written yet.
    :meth:`finish` turns its played episodes into the report (and its folder)."""

    settings: dict
    """what a player is built from (:meth:`EpisodePlayer.build`): env, agent, split, opponent,
    demand scale, episode length"""
    jobs: list[Job]
    seeds: tuple[int, ...]
    nb_episode: int | None
    out_dir: Path | None
    score: bool = False
    player: EpisodePlayer | None = None
    """the driver's own player (env, agent), kept when the episodes are played here"""

    @property
    def keep_files(self) -> bool:
        return self.out_dir is not None

    def run_here(self) -> dict:
        """Play the episodes in this process with the driver's own player, then :meth:`finish`."""
        started = time.perf_counter()
        played = play_here(self.player, self.jobs, self.keep_files)
        return self.finish(played, time.perf_counter() - started)

    def finish(self, played: list[Played], seconds: float) -> dict:
        """The report of ``played`` (the episodes of :attr:`jobs`, in order), written with their
        EpisodeData under :attr:`out_dir` when there is one: first to a ``.partial`` folder, renamed
        only once complete."""
        settings = self.settings
        episodes = [episode for episode, _, _ in played]
        stats = merge_stats([counters for _, counters, _ in played])
        report = _report(settings["env"], settings["agent"], settings["split"], self.seeds, episodes, stats)
        report |= {
            "nb_episode": self.nb_episode,
            "opponent": settings["opponent"],
            "episode_length": settings["episode_length"],
            "demand_scale": settings["demand_scale"],
            "demand_spread": settings["demand_spread"],
            "seconds": seconds,
        }
        for extra in ("contingency_calls", "expert_steps"):  # greedy:n1=K; sac-checked:...:expert
            if extra in stats:
                report[extra] = int(stats[extra])
        if self.score:
            from ace_core.evaluation.score import l2rpn_2020_score

            report["l2rpn_2020_score"] = l2rpn_2020_score(
                settings["env"],
                settings["agent"],
                seeds=self.seeds,
                max_step=settings["episode_length"],
                opponent=settings["opponent"],
            )
        if self.out_dir is not None:
            _write_folder(self.out_dir, played, report)
        return report


def prepare(
    env_name: str,
    agent_spec: str,
    split: str = "test",
    nb_episode: int | None = None,
    out_dir: Path | None = None,
    seeds: tuple[int, ...] = (0,),
    score: bool = False,
    opponent: str = DEFAULT_OPPONENT,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    demand_scale: float = 1.0,
    demand_spread: float = 0.0,
    keep_player: bool = True,
    agent_checked: bool = False,
) -> Evaluation:
    """Every check of :func:`evaluate`, before anything is played or written: the settings, the
    agent (loaded on this env, so a bad spec fails here; ``agent_checked``: already loaded once
    for an env of the same grid, so not again), the split's scenarios and the output folder.
    ``keep_player``: keep the env and agent to play here (not when Ray actors play)."""
    opponent = check_opponent(opponent)
    if nb_episode is not None and nb_episode < 1:
        raise ConfigError(f"nb_episode={nb_episode} must be at least 1 (or omitted for the whole split)")
    if not seeds:
        raise ConfigError("seeds is empty; give at least one seed, e.g. 0")
    env = make_env(
        env_name,
        cache_chronics=False,
        opponent=opponent,
        demand_scale=demand_scale,
        demand_spread=demand_spread,
    )
    agent = None
    if keep_player or not agent_checked:
        agent = load_agent(agent_spec, env, build_action_space(env))  # fails before anything is written
    chosen = scenarios(env, split, episode_length)[:nb_episode]
    if not chosen:
        raise ConfigError(f"env {env_name!r} has no {split} scenarios")
    check_unseen(agent_spec, chosen, split)
    out_dir = Path(out_dir) if out_dir else None
    if out_dir is not None and (out_dir / REPORT_NAME).exists():
        raise ConfigError(f"{out_dir} already holds an evaluation report; choose another --out")
    settings = {
        "env": env_name,
        "agent": agent_spec,
        "split": split,
        "opponent": opponent,
        "demand_scale": demand_scale,
        "demand_spread": demand_spread,
        "episode_length": episode_length,
    }
    jobs = [(scenario.name, seed) for seed in seeds for scenario in chosen]
    player = EpisodePlayer(env, agent, chosen) if keep_player else None
    return Evaluation(settings, jobs, tuple(seeds), nb_episode, out_dir, score, player)


def check_unseen(agent_spec: str | AgentSpec, chosen: list[Scenario], split: str) -> None:
    """Refuse validation or test scenarios that play steps of a day the agent's policy learned
    from (its run's ``days.json``; a run made before runs named their days is not checked)."""
    spec = agent_spec if isinstance(agent_spec, AgentSpec) else AgentSpec.parse(agent_spec)
    if split == "train" or not spec.path:
        return
    seen = learned_in(chosen, days_learned(Path(spec.path)) or [])
    if seen:
        scenario, day = seen[0]
        raise ConfigError(
            f"{split} scenario {scenario.name} plays steps of {day}, a day policy {spec.path} learned "
            f"from ({len({s.name for s, _ in seen})} {split} scenario(s) do): the split was cut with "
            "other days or another episode length; evaluate with the days and --episode-length the "
            "policy was trained with, or fewer --episodes"
        )


def evaluate(
    env_name: str,
    agent_spec: str,
    split: str = "test",
    nb_episode: int | None = None,
    out_dir: Path | None = None,
    *,
    workers: Workers = HERE,
    **settings,
) -> dict:
    """Run ``agent_spec`` on the split's scenarios (the first ``nb_episode``) for each seed, in
    this process or on ``workers``' Ray actors, with the same figures. ``settings``:
    :func:`prepare`'s (seeds, score, opponent, episode_length, demand_scale, demand_spread)."""
    evaluation = prepare(
        env_name, agent_spec, split, nb_episode, out_dir, keep_player=not workers.on_ray, **settings
    )
    if not workers.on_ray:
        return evaluation.run_here()
    ((played, seconds),) = play_batches_on_ray(
        [(evaluation.settings, evaluation.jobs)], evaluation.keep_files, workers
    )
    return evaluation.finish(played, seconds)


def _write_folder(out_dir: Path, played: list[Played], report: dict) -> None:
    """The episodes' EpisodeData and the report under ``out_dir``, renamed from ``.partial`` only
    once complete (an interrupted write leaves no report)."""
    work_dir = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(work_dir, ignore_errors=True)
    try:
        work_dir.mkdir(parents=True)
        _write_episodes(work_dir, played)
        (work_dir / REPORT_NAME).write_text(json.dumps(report, indent=2))
        work_dir.rename(out_dir)
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise


def _write_episodes(work_dir: Path, played: list) -> None:
    """Each episode's EpisodeData under ``episodes/seed<S>/<scenario>/``."""
    for episode, _, files in played:
        folder = work_dir / "episodes" / f"seed{episode['seed']}" / episode["scenario"]
        for relative, content in files.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)


def _report(
    env_name: str,
    agent_spec: str,
    split: str,
    seeds: tuple[int, ...],
    episodes: list[dict],
    stats: dict,
) -> dict:
    times_ms = np.asarray(stats.get("decision_seconds", [])) * 1000.0
    survival = [e["steps_survived"] / e["max_steps"] for e in episodes]
    return {
        "env": env_name,
        "agent": agent_spec,
        "split": split,
        "seeds": list(seeds),
        "episodes": episodes,
        "survival_mean": float(np.mean(survival)),
        "survival_std": float(np.std(survival)),
        "episodes_fully_survived": int(sum(s == 1.0 for s in survival)),
        "reward_mean": float(np.mean([e["reward"] for e in episodes])),
        "attacks": int(sum(e["attacks"] for e in episodes)),
        "decision_ms_p50": float(np.percentile(times_ms, 50)) if len(times_ms) else 0.0,
        "decision_ms_p95": float(np.percentile(times_ms, 95)) if len(times_ms) else 0.0,
        "simulate_calls": int(stats["simulate_calls"]),
        "simulate_calls_per_step": stats["simulate_calls"] / max(stats["steps"], 1),
        "decisions": int(stats["decisions"]),
        # decisions that changed the grid; a no-op in disguise is played as do-nothing
        "real_action_share": stats["real_actions"] / max(stats["decisions"], 1),
        "folded_noops": int(stats["folded_noops"]),
        # redispatch, curtailment and storage in force, per day of 288 steps (ace_core.grid.flex.moves)
        "flex_mwh_per_day": stats.get("flex_mwh", 0.0) * STEPS_PER_DAY / max(stats["steps"], 1),
        "cost_per_day": stats.get("flex_euros", 0.0) * STEPS_PER_DAY / max(stats["steps"], 1),
    }
