"""Evaluation episodes, played in this process or fanned out to Ray actors.

An :class:`EpisodePlayer` holds one env, one agent and grid2op's Runner, and plays one (scenario,
grid seed) at a time. It returns the episode's figures, the agent's counters for that episode
alone (decision times, simulations, decisions; summed by :func:`merge_stats`) and, when asked, the
EpisodeData files as bytes, so the driver writes them wherever the player ran (workers of a
cluster share no disk).

:func:`play_batches_on_ray` gives the episodes to ``workers``' actors
(:class:`ace_core.workers.Workers`: local by default, or a cluster), as a mine does
(:mod:`ace_core.imitation.ray_mining`). Every episode is played with its own seeds from a freshly
reset env, so the figures are those of one process, in the same order. A worker that dies loses only
the episode it was playing, which goes to a new worker (at most ``MAX_ATTEMPTS`` times). Inside
:func:`ray_started` (a table, the stress table) the actors outlive each evaluation: an actor builds
a player per evaluation's settings the first time it plays one of its episodes and keeps the last
:data:`PLAYERS_KEPT`, so the next row or agent costs no new worker processes. Several evaluations
given at once (a table's agents, the stress table's rows) are one queue: a worker that finishes one
evaluation's last episode starts the next evaluation's first rather than waiting for the other
workers.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

from grid2op.Runner import Runner

from ace_core.agents.loading import load_agent
from ace_core.errors import ConfigError
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.opponents import attacks_in
from ace_core.grid.scenarios import Scenario, scenarios
from ace_core.workers import Workers

MAX_ATTEMPTS = 3
PLAYERS_KEPT = 2
"""players (env, agent, Runner) an actor keeps, by evaluation settings, most recent first"""
Job = tuple[str, int]
"""(scenario name, grid seed)"""
Played = tuple[dict, dict, dict[str, bytes]]
"""an episode's figures, the agent's counters for it, its EpisodeData files"""


class EpisodePlayer:
    """Plays episodes of one agent on one env (see the module)."""

    def __init__(self, env, agent, chosen: list[Scenario]) -> None:
        self.agent = agent
        self.scenarios = {scenario.name: scenario for scenario in chosen}
        self.runner = Runner(**env.get_params_for_runner(), agentClass=None, agentInstance=agent)

    @classmethod
    def build(cls, settings: dict) -> EpisodePlayer:
        """A player from the evaluation's settings (env, agent, split, opponent, demand scale and
        spread, episode length): what a Ray actor receives."""
        env = make_env(
            settings["env"],
            cache_chronics=False,
            opponent=settings["opponent"],
            demand_scale=settings["demand_scale"],
            demand_spread=settings["demand_spread"],
        )
        agent = load_agent(settings["agent"], env, build_action_space(env))
        return cls(env, agent, scenarios(env, settings["split"], settings["episode_length"]))

    def play(self, job: Job, keep_files: bool) -> Played:
        scenario, seed = self.scenarios[job[0]], job[1]
        if not keep_files:
            return _episode(self.runner, scenario, seed, None), take_stats(self.agent.stats), {}
        with tempfile.TemporaryDirectory(prefix="gridace-episode-") as folder:
            episode = _episode(self.runner, scenario, seed, folder)
            files = {
                str(path.relative_to(folder)): path.read_bytes()
                for path in sorted(Path(folder).rglob("*"))
                if path.is_file()
            }
        return episode, take_stats(self.agent.stats), files


class RayEpisodePlayer:
    """A Ray actor's players: :class:`EpisodePlayer` built from each evaluation's settings alone,
    the first time one of its episodes comes, and kept for the next (the last
    :data:`PLAYERS_KEPT`)."""

    def __init__(self) -> None:
        self.players: OrderedDict[str, EpisodePlayer] = OrderedDict()

    def play(self, settings: dict, job: Job, keep_files: bool) -> Played:
        key = json.dumps(settings, sort_keys=True)
        player = self.players.pop(key, None) or EpisodePlayer.build(settings)
        self.players[key] = player
        while len(self.players) > PLAYERS_KEPT:
            self.players.popitem(last=False)
        return player.play(job, keep_files)


_kept: list | None = None
"""inside :func:`ray_started`: the actors kept for the next evaluation of its block"""


def take_stats(stats: dict) -> dict:
    """The agent's counters since the last call, which are then zeroed (in place: the Runner's
    copies of the agent share the dict)."""
    taken = {key: list(value) if isinstance(value, list) else value for key, value in stats.items()}
    for key, value in stats.items():
        if isinstance(value, list):
            value.clear()
        else:
            stats[key] = 0
    return taken


def merge_stats(parts: list[dict]) -> dict:
    """Counters of several episodes as one: lists joined, counts summed."""
    merged: dict = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, list):
                merged.setdefault(key, []).extend(value)
            else:
                merged[key] = merged.get(key, 0) + value
    return merged


def _episode(runner: Runner, scenario: Scenario, seed: int, folder: str | None) -> dict:
    """One scenario with one seed through the Runner (its EpisodeData under ``folder``)."""
    # the Runner's last field is the chronic step the episode could reach (start + length), not
    # the episode's length: the scenario knows the length
    (_, _, reward, survived, _, episode_data), *_ = runner.run(
        nb_episode=1,
        reset_options=[scenario.reset_options()],
        env_seeds=[seed],
        agent_seeds=[seed],
        path_save=folder,
        add_detailed_output=True,  # the EpisodeData, for the attacks
    )
    return {
        "scenario": scenario.name,
        "seed": seed,
        "steps_survived": int(survived),
        "max_steps": scenario.length,
        "reward": float(reward),
        "attacks": attacks_in(episode_data),
    }


def play_here(player: EpisodePlayer, jobs: list[Job], keep_files: bool) -> list[Played]:
    return [player.play(job, keep_files) for job in jobs]


@contextlib.contextmanager
def ray_started(workers: Workers) -> Iterator[None]:
    """Ray up for the block when the episodes go to it (``workers.on_ray``), started once for
    several evaluations (a table, the stress table) rather than once for each; the actors of its
    first evaluation play the next ones too and die with the block."""
    global _kept
    if not workers.on_ray or _kept is not None:  # no Ray, or inside a block already
        yield
        return
    import ray

    with workers.ray_up():
        _kept = []  # play_batches_on_ray leaves its actors here for the next evaluation
        try:
            yield
        finally:
            for actor in _kept:
                ray.kill(actor)
            _kept = None


Batch = tuple[dict, list[Job]]
"""an evaluation's settings and its jobs"""
BatchDone = Callable[[int, list[Played], float], None]
"""``done(i, played, seconds)``: batch ``i``'s episodes, in the order of its jobs, as soon as its
last one is played, and the seconds from its first episode's start to its last one's end"""


def play_batches_on_ray(
    batches: list[Batch],
    keep_files: bool,
    workers: Workers,
    done: BatchDone | None = None,
    log: Callable[[str], None] = print,
) -> list[tuple[list[Played], float]]:
    """The jobs of several evaluations on ``workers``' Ray actors, as one queue: a worker free at
    the end of one evaluation starts the next instead of waiting for the last episode of the
    first. Each batch's (episodes, seconds) in the order of ``batches``, also given to ``done``
    as soon as the batch is complete (so a table writes each report as it comes)."""
    with workers.ray_up():
        return _play_queue(batches, keep_files, workers.count, done, log)


def _play_queue(
    batches: list[Batch], keep_files: bool, count: int, done: BatchDone | None, log: Callable[[str], None]
) -> list[tuple[list[Played], float]]:
    import ray

    queue = [
        (b, j, settings, job) for b, (settings, jobs) in enumerate(batches) for j, job in enumerate(jobs)
    ]
    actor_class = ray.remote(num_cpus=1)(RayEpisodePlayer)
    kept = _kept is not None  # inside ray_started: reuse its actors and leave them there
    actors = list(_kept) if kept else []
    actors += [actor_class.remote() for _ in range(min(count, len(queue)) - len(actors))]
    idle, pending, running = list(actors), list(queue), {}
    results: list[dict[int, Played]] = [{} for _ in batches]
    first_start: dict[int, float] = {}
    seconds: dict[int, float] = {}
    attempts: Counter = Counter()
    try:
        while pending or running:
            while idle and pending:
                batch, index, settings, job = task = pending.pop(0)
                actor = idle.pop()
                first_start.setdefault(batch, time.perf_counter())
                running[actor.play.remote(settings, job, keep_files)] = (actor, task)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)  # Ctrl-C gets through
            if not ready:
                continue
            actor, task = running.pop(ready[0])
            batch, index, _, job = task
            try:
                results[batch][index] = ray.get(ready[0])
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                attempts[(batch, index)] += 1
                if attempts[(batch, index)] >= MAX_ATTEMPTS:
                    raise ConfigError(
                        f"episode {job[0]} seed {job[1]} lost its worker {MAX_ATTEMPTS} times"
                    ) from exc
                log(f"a worker died playing {job[0]} seed {job[1]}; giving it to a new worker")
                pending.insert(0, task)
                actors.remove(actor)
                actors.append(actor_class.remote())
                idle.append(actors[-1])
                continue
            idle.append(actor)
            if len(results[batch]) == len(batches[batch][1]):
                seconds[batch] = time.perf_counter() - first_start[batch]
                if done is not None:
                    done(batch, _in_order(results[batch]), seconds[batch])
    finally:
        if kept:
            _kept[:] = actors
        else:
            for actor in actors:
                ray.kill(actor)
    return [(_in_order(results[batch]), seconds[batch]) for batch in range(len(batches))]


def _in_order(results: dict[int, Played]) -> list[Played]:
    return [results[index] for index in range(len(results))]
