"""Work done beside training that must leave the trainer's random streams as it found them.

Validation and the imitation start run inside a training run, but a resumed run (which may skip
them, or meet them at another point) must stay identical to an uninterrupted one: torch's,
numpy's and Python's global generators are saved before and put back after.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


@contextmanager
def preserved_rng() -> Iterator[None]:
    """Restore the global torch, numpy and Python RNG states on exit."""
    states = torch.get_rng_state(), np.random.get_state(), random.getstate()
    try:
        yield
    finally:
        torch.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])
