import pytest
from lightsim2grid import LightSimBackend

from ace_core.errors import UnknownEnvError
from ace_core.grid.envs import available_env_names, make_env


def test_unknown_env_lists_the_available_names():
    with pytest.raises(UnknownEnvError) as info:
        make_env("l2rpn_does_not_exist")
    message = str(info.value)
    assert "l2rpn_does_not_exist" in message
    assert "l2rpn_case14_sandbox" in message and "l2rpn_wcci_2020" in message


def test_bundled_envs_are_available_offline():
    names = available_env_names()
    for name in (
        "l2rpn_case14_sandbox",
        "rte_case14_realistic",
        "l2rpn_wcci_2020",
        "l2rpn_neurips_2020_track1",
    ):
        assert name in names


def test_env_runs_on_lightsim_with_margin_reward(sandbox):
    assert isinstance(sandbox.backend, LightSimBackend)
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    obs, reward, done, _ = sandbox.step(sandbox.action_space({}))
    assert not done
    assert reward == pytest.approx(1.0 - obs.rho.max(), abs=1e-5)
