"""A mine's episodes fanned out to Ray actors: local by default, a cluster with ``--ray-address``.

Each finished episode is written by the driver (workers on other machines share no disk); a worker
that dies loses only the episode it was playing, which goes to a new worker (at most
``MAX_ATTEMPTS`` times).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from ace_core.imitation.data import save_npz_atomic
from ace_core.imitation.mine_files import MineError, episode_file, marker, write_marker
from ace_core.workers import Workers

MAX_ATTEMPTS = 3


def run_with_ray(worker_class, spec, out: Path, todo, features, workers: Workers, log, player=None) -> int:
    """Play ``todo`` on ``workers``' Ray actors of ``worker_class`` (a mine's episode worker);
    returns how many episodes were played."""
    if not todo:
        return 0
    for stale in (out / "episodes").glob("*.playing*"):  # and a marker cut short
        stale.unlink()  # left by a mine that stopped: those episodes are played again
    with workers.ray_up():
        return _play(worker_class, spec, out, todo, features, workers.count, log, player)


def _play(worker_class, spec, out: Path, todo, features, count: int, log, player) -> int:
    import ray

    actor_class = ray.remote(num_cpus=1)(worker_class)
    pending = list(todo)
    attempts: Counter = Counter()
    running: dict = {}
    player = ray.put(player) if player is not None else None  # sent once, shared by the workers
    actors = [actor_class.remote(spec, features, player) for _ in range(min(count, len(todo)))]
    idle = list(actors)  # every actor ever started is in ``actors``, to be stopped at the end
    done_count, decisions, clock = 0, 0, time.perf_counter()
    try:
        while pending or running:
            while idle and pending:
                scenario, seed = pending.pop(0)
                actor = idle.pop()
                path = episode_file(out, scenario, seed)
                try:
                    # who plays what, for whoever watches the directory
                    write_marker(path, ray.get(actor.where.remote()))
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                    pass  # a worker dead before its first episode: play() below fails and is retried
                running[actor.play.remote(scenario, seed)] = (actor, scenario, seed)
            # a timeout, so that Ctrl-C reaches Python while workers play
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            if not ready:
                continue
            actor, scenario, seed = running.pop(ready[0])
            path = episode_file(out, scenario, seed)
            try:
                record = ray.get(ready[0])
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                marker(path).unlink(missing_ok=True)
                attempts[(scenario, seed)] += 1
                if attempts[(scenario, seed)] >= MAX_ATTEMPTS:
                    raise MineError(
                        f"episode {scenario.name} seed {seed} lost its worker {MAX_ATTEMPTS} times"
                    ) from exc
                log(f"a worker died playing {scenario.name} seed {seed}; giving it to a new worker")
                pending.insert(0, (scenario, seed))
                actors.append(actor_class.remote(spec, features, player))
                idle.append(actors[-1])
                continue
            save_npz_atomic(path, **record)
            marker(path).unlink(missing_ok=True)
            done_count += 1
            decisions += len(record["action"])
            idle.append(actor)
            rate = done_count / max(time.perf_counter() - clock, 1e-9) * 60
            log(f"mined {done_count}/{len(todo)} episodes ({decisions} decisions, {rate:.1f} episodes/min)")
    finally:
        for actor in actors:
            ray.kill(actor)
    return done_count
