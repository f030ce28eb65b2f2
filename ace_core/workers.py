"""Where a command's episodes play: in this process, or on Ray actors started here or on a cluster.

Every command that fans episodes out takes one :class:`Workers` (``--workers N``, ``--ray-address``):
mines and DAgger rounds (:mod:`ace_core.imitation.ray_mining`), evaluations, tables and the stress
table (:mod:`ace_core.evaluation.episodes`), a run's own mines and validations
(:mod:`ace_core.training.validation_ray`). One worker and no address is this process, without Ray;
the figures are the same either way.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ace_core.errors import ConfigError


@dataclass(frozen=True)
class Workers:
    count: int = 1
    """Ray actors for the episodes; 1 with no address: this process"""
    address: str | None = None
    """a Ray cluster to join (HOST:PORT, ray://HOST:PORT or auto) rather than Ray started here"""

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ConfigError(f"--workers {self.count} must be at least 1 (Ray worker processes)")

    @property
    def on_ray(self) -> bool:
        return self.count > 1 or bool(self.address)

    def check(self) -> None:
        """Fail at once (a few seconds) on a cluster address nothing answers; ray.init would wait
        minutes. :meth:`up` checks too; a command that writes before Ray is up checks first."""
        if not self.address or self.address == "auto":
            return
        host_port = self.address.removeprefix("ray://").rstrip("/")
        host, _, port = host_port.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"--ray-address {self.address!r} is not HOST:PORT, ray://HOST:PORT or auto")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as exc:
            raise ConfigError(
                f"no Ray cluster answers at {self.address} ({exc}); start one with `ray start --head` "
                "or leave --ray-address out to run on this machine"
            ) from None

    def up(self) -> bool:
        """The address checked (even with Ray up: a bad one is refused, not played on the Ray at
        hand), then the cluster joined, or Ray started here with ``count`` CPUs, unless Ray is up
        already; whether it was started now (its caller then shuts it down)."""
        import ray

        self.check()
        if ray.is_initialized():
            return False
        self._init()
        return True

    @contextlib.contextmanager
    def ray_up(self) -> Iterator[None]:
        """Ray for the block (:meth:`up`), shut down after the block only when started for it."""
        import ray

        started_here = self.up()
        try:
            yield
        finally:
            if started_here:
                ray.shutdown()

    def _init(self) -> None:
        import ray

        # local workers import this package the way the driver does
        root = str(Path(__file__).resolve().parents[1])
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        # Ray starts its workers at niceness 15; the episodes are the job asked for, so its workers
        # run at the driver's priority (on a busy machine niced workers got a tenth of a core)
        os.environ.setdefault("RAY_worker_niceness", "0")
        options = {"address": self.address} if self.address else {"num_cpus": self.count}
        try:
            ray.init(**options, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except ConnectionError as exc:  # it answers but refuses us: most often its token authentication
            raise ConfigError(
                f"cannot join the Ray cluster at {self.address} ({exc}); a cluster with token "
                "authentication needs RAY_AUTH_MODE=token here, and its token (`ray get-auth-token` "
                "on its head) in ~/.ray/auth_token or RAY_AUTH_TOKEN"
            ) from exc


HERE = Workers()
"""this process, without Ray"""
