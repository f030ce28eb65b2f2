import math

import numpy as np
import pytest

from ace_core.errors import ConfigError
from ace_core.rl.buffer import SOURCE_LLM, SOURCE_RL, ReplayBuffer, Transition
from ace_core.rl.mixed_buffer import MixedBuffer, priority

OBS, MASK = 3, 2


def _filled(n: int, capacity: int = 100) -> ReplayBuffer:
    buffer = ReplayBuffer(capacity, OBS, MASK)
    for i in range(n):
        buffer.add(
            Transition(
                np.full(OBS, i),
                np.ones(MASK, bool),
                i,
                0.0,
                np.zeros(OBS),
                np.ones(MASK, bool),
                False,
                0.99,
                0.0,
            )
        )
    return buffer


def _refine(mixed: MixedBuffer, action: int, r_llm: float, r_rl: float) -> float:
    zeros, ones = np.zeros(OBS), np.ones(MASK, bool)
    return mixed.add_refinement(Transition(zeros, ones, action, r_llm, zeros, ones, False, 0.99, r_llm), r_rl)


def test_priority_is_eq_8_with_validity_and_clip():
    assert priority(0.3, 0.1, temperature=0.1, max_weight=100.0) == pytest.approx(math.exp(2.0))
    assert priority(0.1, 0.1, 0.1, 100.0) == 0.0  # not strictly better: invalid
    assert priority(-0.5, 0.2, 0.1, 100.0) == 0.0
    assert priority(1.0, -1.0, 0.01, 10.0) == 10.0  # clipped, and no overflow


def test_batches_take_beta_from_the_llm_buffer_with_their_priority_as_weight():
    mixed = MixedBuffer(_filled(50), ReplayBuffer(10, OBS, MASK), beta=0.25, temperature=0.1, max_weight=10.0)
    rng = np.random.default_rng(0)
    only_rl = mixed.sample(32, rng)  # an empty LLM buffer: everything from the agent
    assert (only_rl.sources == SOURCE_RL).all() and (only_rl.weights == 1.0).all()

    assert _refine(mixed, 7, 0.2, 0.1) == pytest.approx(math.e)
    assert _refine(mixed, 8, 0.1, 0.3) == 0.0  # worse than the RL action: never stored
    assert len(mixed.llm) == 1 and len(mixed) == 50
    batch = mixed.sample(32, rng)
    llm_rows = batch.sources == SOURCE_LLM
    assert int(llm_rows.sum()) == 8 and len(batch.actions) == 32
    assert (batch.actions[llm_rows] == 7).all()
    assert batch.weights[llm_rows].numpy() == pytest.approx(math.e)
    assert (batch.weights[~llm_rows] == 1.0).all()


def test_llm_rows_are_drawn_in_proportion_to_priority():
    mixed = MixedBuffer(_filled(10), ReplayBuffer(10, OBS, MASK), beta=1.0, temperature=0.1, max_weight=100.0)
    _refine(mixed, 1, 0.1 + 0.1 * math.log(2.0), 0.1)  # w = 2
    _refine(mixed, 2, 0.1 + 0.1 * math.log(6.0), 0.1)  # w = 6
    actions = mixed.sample(8000, np.random.default_rng(1)).actions.numpy()
    assert (actions == 2).mean() == pytest.approx(0.75, abs=0.02)


def test_state_dict_round_trip_and_bad_settings():
    mixed = MixedBuffer(_filled(5), ReplayBuffer(10, OBS, MASK), beta=0.5)
    _refine(mixed, 3, 0.5, 0.0)
    again = MixedBuffer(_filled(5), ReplayBuffer(10, OBS, MASK), beta=0.5)
    again.load_state_dict(mixed.state_dict())
    a, b = mixed.sample(16, np.random.default_rng(2)), again.sample(16, np.random.default_rng(2))
    assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a, b))
    with pytest.raises(ConfigError, match="beta"):
        MixedBuffer(_filled(1), ReplayBuffer(1, OBS, MASK), beta=1.5)
    with pytest.raises(ConfigError, match="temperature"):
        MixedBuffer(_filled(1), ReplayBuffer(1, OBS, MASK), beta=0.5, temperature=0.0)
