"""A validation's episodes on Ray actors: the figures of one process, in a fraction of its time.

A run with more than one worker (``train --workers N``), or on a cluster (``--ray-address``),
plays each validation's episodes (every copy of the days, every grid seed) on N actors, started
at its first validation and kept until the run ends. Each actor holds the run's action space,
networks of the run's shapes and an env per copy of the days (demand scale, opponent); a
validation sends the actor's weights once (``ray.put``) with the features' settings, and each
actor plays its share of the episodes with
:func:`~ace_core.training.validation_episodes.play_episodes`, as the trainer's process does.
Since :func:`~ace_core.grid.scenarios.reset_to` starts an episode as a fresh env would, and the
plain policy does not sample, each episode gives what it gives in the trainer's process, whatever
actor plays it after whatever other episode.
"""

from __future__ import annotations

from ace_core.config.sections import SACConfig
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.features import FeatureBuilder
from ace_core.rl.sac import SAC
from ace_core.training.validation_episodes import Copy, Episode, play_episodes
from ace_core.workers import Workers


class ValidationWorker:
    """What an actor holds: the run's space, networks of its shapes and an env per copy."""

    def __init__(
        self, env_name: str, space: ActionSpace, sac_config: SACConfig, obs_size: int, rho_threshold: float
    ):
        import torch

        torch.set_num_threads(1)  # one Ray CPU per worker
        self.env_name, self.space, self.rho_threshold = env_name, space, rho_threshold
        self.sac = SAC(obs_size, space, sac_config)
        self.envs: dict[Copy, object] = {}

    def play(self, actor: dict, features: FeatureBuilder, episodes: list[Episode]) -> list[tuple[int, float]]:
        """(steps survived, reward) of each episode, in order, played by the policy of ``actor``."""
        self.sac.actor.load_state_dict(actor)  # in place: the fast path's views follow
        return play_episodes(
            self.envs, self.env_name, self.space, self.sac, features, self.rho_threshold, episodes
        )


class RayValidation:
    """``workers`` actors for a run's validations (see the module)."""

    def __init__(
        self,
        env_name: str,
        space: ActionSpace,
        rho_threshold: float,
        workers: Workers,
    ) -> None:
        self.env_name, self.space, self.rho_threshold = env_name, space, rho_threshold
        self.workers = workers
        self.actors: list = []
        self.started_ray = False

    def play(
        self, sac: SAC, features: FeatureBuilder, episodes: list[Episode]
    ) -> list[tuple[int, float]] | None:
        """(steps survived, reward) of each of ``episodes``, in their order; None when an actor
        died (the caller plays them itself; new actors serve the next validation)."""
        import ray

        if not self.actors:
            self._start(sac, features)
        actor = ray.put({name: value.detach().clone() for name, value in sac.actor.state_dict().items()})
        shares = [episodes[i :: len(self.actors)] for i in range(len(self.actors))]
        try:
            played = ray.get([a.play.remote(actor, features, share) for a, share in zip(self.actors, shares)])
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
            self._stop_actors()
            return None
        out: list[tuple[int, float]] = [(0, 0.0)] * len(episodes)
        for i, results in enumerate(played):
            out[i :: len(self.actors)] = results
        return out

    def _start(self, sac: SAC, features: FeatureBuilder) -> None:
        import ray

        if self.workers.up():
            self.started_ray = True
        worker = ray.remote(num_cpus=1)(ValidationWorker)
        self.actors = [
            worker.remote(self.env_name, self.space, sac.config, features.size, self.rho_threshold)
            for _ in range(self.workers.count)
        ]

    def close(self) -> None:
        """Stop the actors (and Ray, when they started it)."""
        if not self.actors and not self.started_ray:
            return
        import ray

        self._stop_actors()
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False

    def _stop_actors(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
