"""Training settings that the real trainer finishes in seconds, shared by every test that trains.

The 14-bus sandbox with a low rho threshold (0.5): on this easy grid the agent then decides at
nearly every step, so a few hundred steps exercise learning, game overs, episode ends, checkpoints
and, with an LLM, refinements.
"""

from __future__ import annotations

from typing import Any

SANDBOX: dict[str, Any] = dict(
    env="l2rpn_case14_sandbox",
    learning_starts=32,
    batch_size=32,
    hidden=64,
    log_every=100,
    rho_threshold=0.5,
)


def sandbox_settings(**overrides: Any) -> dict[str, Any]:
    """:data:`SANDBOX` with ``overrides``, as keyword arguments for ``TrainConfig``."""
    return {**SANDBOX, **overrides}
