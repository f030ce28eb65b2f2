import numpy as np
import pytest

from ace_core.agents.sac import load_sac
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.text import action_text, state_text
from ace_core.live import untrained_policy


def test_feature_vector_has_the_documented_size_and_range(sandbox, sandbox_features, fresh_obs):
    f = sandbox_features(fresh_obs)
    assert f.shape == (sandbox_features.size,) == (5 * 20 + 57 + 6 + 11 + 14 + 3,)
    assert f.dtype == np.float32
    assert np.all(f >= -1.0) and np.all(f <= 2.0)


def test_features_follow_the_grid(sandbox, sandbox_space, sandbox_features, fresh_obs):
    before = sandbox_features(fresh_obs)
    obs, *_ = sandbox.step(sandbox.action_space({"set_line_status": [(7, -1)]}))
    after = sandbox_features(obs)
    assert before[20 + 7] == 1.0 and after[20 + 7] == 0.0  # line status block
    sandbox.reset(seed=0, options={"time serie id": 0})


def test_the_load_scale_travels_with_the_policy(sandbox, sandbox_space, fresh_obs, tmp_path):
    path = untrained_policy("l2rpn_case14_sandbox", tmp_path / "policy", env=sandbox)
    saved = FeatureBuilder(sandbox).load_scale
    # the env moves on: another time of day, other loads
    for _ in range(60):
        obs, *_ = sandbox.step(sandbox.action_space({}))
    assert not np.allclose(1.5 * np.abs(obs.load_p), saved)
    _, _, features, _ = load_sac(path, sandbox, sandbox_space)
    np.testing.assert_array_equal(features.load_scale, saved)
    # checkpoints from before the scale was saved fall back to the env's current observation
    fallback = FeatureBuilder.for_policy(sandbox, {})
    np.testing.assert_allclose(fallback.load_scale, np.maximum(1.5 * np.abs(obs.load_p), 1e-3))


def test_a_load_scale_of_the_wrong_size_is_refused(sandbox):
    with pytest.raises(ValueError, match="this env has 11 loads"):
        FeatureBuilder(sandbox, load_scale=[1.0, 2.0])


def test_36_bus_features(wcci):
    builder = FeatureBuilder(wcci)
    assert builder(wcci.reset(seed=0)).shape == (570,)


def test_the_overflow_block_says_how_close_each_line_is_to_tripping(sandbox, sandbox_features, fresh_obs):
    obs = fresh_obs.copy()
    obs.timestep_overflow[:] = 0
    obs.timestep_overflow[[3, 7]] = [1, 2]  # over its limit for one step; for the two allowed
    block = sandbox_features(obs)[-20:]
    assert block[3] == 0.5 and block[7] == 1.0
    assert np.count_nonzero(block) == 2


def test_policies_trained_before_the_overflow_block_keep_their_inputs(sandbox, fresh_obs):
    old = FeatureBuilder.for_policy(sandbox, {"features": {"load_scale": [1.0] * 11}})
    assert not old.overflow and old(fresh_obs).shape == (old.size,) == (171,)
    assert FeatureBuilder.from_state(sandbox, FeatureBuilder(sandbox).state_dict()).overflow
    with pytest.raises(ValueError, match="does not read the overflow block and these features do"):
        FeatureBuilder(sandbox).load_state_dict({"load_scale": [1.0] * 11})


def test_state_text_mentions_loads_and_disconnections(sandbox, sandbox_space, fresh_obs):
    obs, *_ = sandbox.step(sandbox.action_space({"set_line_status": [(7, -1)]}))
    text = state_text(obs, sandbox_space)
    assert "Max line load" in text and "Most loaded" in text
    assert "Disconnected: line 5-10" in text  # line 7 joins substations 5 and 10
    assert len(text) < 800  # compact enough for a small model's prompt
    assert action_text(sandbox_space, 0) == "do nothing"
    sandbox.reset(seed=0, options={"time serie id": 0})


def test_state_text_lists_overloads(sandbox, sandbox_space, fresh_obs):
    limits = sandbox.get_thermal_limit()
    try:
        sandbox.set_thermal_limit(limits * 0.5)
        obs = sandbox.reset(seed=0, options={"time serie id": 0})
        text = state_text(obs, sandbox_space)
        assert "Overloaded: line" in text
    finally:
        sandbox.set_thermal_limit(limits)
        sandbox.reset(seed=0, options={"time serie id": 0})
