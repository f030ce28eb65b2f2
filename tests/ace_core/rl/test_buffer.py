import numpy as np

from ace_core.rl.buffer import SOURCE_LLM, SOURCE_RL, ReplayBuffer


def _fill(buffer, n, start=0):
    for i in range(start, start + n):
        obs = np.full(3, i, np.float32)
        buffer.add(
            obs,
            np.array([True, i % 2 == 0]),
            i,
            float(i),
            obs + 1,
            np.array([True, True]),
            i % 5 == 0,
            0.9,
            0.5,
            SOURCE_LLM if i % 3 == 0 else SOURCE_RL,
            2.0 if i % 3 == 0 else 1.0,
        )


def test_sample_is_typed_and_consistent():
    buffer = ReplayBuffer(100, 3, 2)
    _fill(buffer, 50)
    batch = buffer.sample(32, np.random.default_rng(0))
    assert batch.obs.shape == (32, 3) and batch.mask.shape == (32, 2)
    assert batch.actions.dtype.is_floating_point is False
    # every field of a row belongs to the same transition
    np.testing.assert_array_equal(batch.obs[:, 0].numpy(), batch.actions.numpy())
    np.testing.assert_array_equal(batch.rewards.numpy(), batch.actions.numpy())
    np.testing.assert_array_equal(batch.next_obs[:, 0].numpy(), batch.actions.numpy() + 1)
    assert set(batch.sources.tolist()) <= {SOURCE_RL, SOURCE_LLM}
    np.testing.assert_array_equal(batch.weights.numpy() == 2.0, batch.sources.numpy() == SOURCE_LLM)


def test_capacity_wraps_around_oldest_first():
    buffer = ReplayBuffer(10, 3, 2)
    _fill(buffer, 25)
    assert len(buffer) == 10
    assert sorted(buffer.actions.tolist()) == list(range(15, 25))


def test_state_dict_round_trip():
    buffer = ReplayBuffer(10, 3, 2)
    _fill(buffer, 13)
    copy = ReplayBuffer(10, 3, 2)
    copy.load_state_dict(buffer.state_dict())
    assert len(copy) == len(buffer) and copy.pos == buffer.pos
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    a, b = buffer.sample(8, rng_a), copy.sample(8, rng_b)
    for x, y in zip(a, b):
        assert (x == y).all()
