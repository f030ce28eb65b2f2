"""Fixtures for the core: one env per grid for the session (making one costs 1-3 s)."""

import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder


@pytest.fixture(scope="session")
def sandbox():
    return make_env("l2rpn_case14_sandbox")


@pytest.fixture(scope="session")
def sandbox_space(sandbox):
    return build_action_space(sandbox)


@pytest.fixture(scope="session")
def sandbox_features(sandbox):
    return FeatureBuilder(sandbox)


@pytest.fixture(scope="session")
def wcci():
    return make_env("l2rpn_wcci_2020")


@pytest.fixture(scope="session")
def wcci_space(wcci):
    return build_action_space(wcci)


@pytest.fixture
def fresh_obs(sandbox):
    return sandbox.reset(seed=0, options={"time serie id": 0})
