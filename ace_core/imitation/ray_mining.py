"""A mine's episodes fanned out to Ray actors: local by default, a cluster with ``--ray-address``.

Each finished episode is written by the driver (workers on other machines share no disk); a worker
that dies loses only the episode it was playing, which goes to a new worker (at most
``MAX_ATTEMPTS`` times).
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from pathlib import Path

from ace_core.imitation.data import save_npz_atomic
from ace_core.imitation.mine_files import MineError, episode_file, marker, write_marker

MAX_ATTEMPTS = 3


def check_ray_address(address: str) -> None:
    """Fail at once (a few seconds) on a cluster address nothing answers; ray.init would wait minutes."""
    if address == "auto":
        return
    host_port = address.removeprefix("ray://").rstrip("/")
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        raise MineError(f"--ray-address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise MineError(
            f"no Ray cluster answers at {address} ({exc}); start one with `ray start --head` "
            "or leave --ray-address out to run on this machine"
        ) from None


def start_ray(workers: int, ray_address: str | None = None) -> None:
    """Join the cluster at ``ray_address``, or start Ray here with ``workers`` CPUs."""
    import ray

    # local workers import this package the way the driver does
    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    # Ray starts its workers at niceness 15; a local mine is the job asked for, so its workers
    # run at the driver's priority (on a busy machine niced workers got a tenth of a core)
    os.environ.setdefault("RAY_worker_niceness", "0")
    options = {"address": ray_address} if ray_address else {"num_cpus": workers}
    try:
        ray.init(**options, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:  # it answers but refuses us: most often its token authentication
        raise MineError(
            f"cannot join the Ray cluster at {ray_address} ({exc}); a cluster with token "
            "authentication needs RAY_AUTH_MODE=token here, and its token (`ray get-auth-token` "
            "on its head) in ~/.ray/auth_token or RAY_AUTH_TOKEN"
        ) from exc


def run_with_ray(
    worker_class, spec, out: Path, todo, features, workers: int, ray_address, log, player=None
) -> int:
    """Play ``todo`` on ``workers`` Ray actors of ``worker_class`` (a mine's episode worker);
    returns how many episodes were played."""
    if not todo:
        return 0
    import ray

    for stale in (out / "episodes").glob("*.playing*"):  # and a marker cut short
        stale.unlink()  # left by a mine that stopped: those episodes are played again
    started_here = not ray.is_initialized()
    if started_here:
        start_ray(workers, ray_address)
    actor_class = ray.remote(num_cpus=1)(worker_class)
    pending = list(todo)
    attempts: Counter = Counter()
    running: dict = {}
    player = ray.put(player) if player is not None else None  # sent once, shared by the workers
    actors = [actor_class.remote(spec, features, player) for _ in range(min(workers, len(todo)))]
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
        if started_here:
            ray.shutdown()
    return done_count
