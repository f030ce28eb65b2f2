"""Training a policy: :func:`run` (:mod:`ace_core.training.launch`) runs a training run.

``run`` is imported on first use: the web process imports :mod:`ace_core.training.recipes` and
must not load torch and grid2op with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from ace_core.training.launch import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
