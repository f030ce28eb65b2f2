import numpy as np
import pytest

from ace_core.rl.buffer import SOURCE_LLM, SOURCE_RL, ReplayBuffer, RowOverwrittenError, Transition


def _fill(buffer, n, start=0):
    for i in range(start, start + n):
        obs = np.full(3, i, np.float32)
        buffer.add(
            Transition(
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


def test_add_returns_rows_that_keep_counting_past_the_capacity():
    buffer = ReplayBuffer(4, 3, 2)
    rows = [
        buffer.add(
            Transition(np.zeros(3), np.ones(2, bool), i, 1.0, np.zeros(3), np.ones(2, bool), False, 0.9, 1.0)
        )
        for i in range(6)
    ]
    assert rows == list(range(6))
    buffer.shape_reward(rows[5], 0.5)
    buffer.shape_reward(rows[2], -0.25)
    assert buffer.rewards[5 % 4] == 1.5 and buffer.rewards[2] == 0.75
    # row 1's slot now holds row 5: shaping it would change another decision's reward
    with pytest.raises(RowOverwrittenError, match="row 1 is not in the replay buffer; it holds rows 2 to 5"):
        buffer.shape_reward(rows[1], 1.0)
    assert buffer.rewards[1] == 1.5
    with pytest.raises(RowOverwrittenError):
        buffer.shape_reward(6, 1.0)


def test_a_checkpoint_without_a_row_count_restores_one_consistent_with_its_slots():
    buffer = ReplayBuffer(10, 3, 2)
    _fill(buffer, 13)
    state = buffer.state_dict()
    del state["added"]  # as written before rows were counted
    copy = ReplayBuffer(10, 3, 2)
    copy.load_state_dict(state)
    assert copy.added % 10 == buffer.added % 10 and copy.holds(copy.added - 1)
