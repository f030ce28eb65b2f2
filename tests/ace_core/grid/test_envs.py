import shutil

import pandas as pd
import pytest
from lightsim2grid import LightSimBackend

from ace_core.errors import UnknownEnvError
from ace_core.grid.envs import available_env_names, bundled_env_dir, make_env
from ace_core.grid.scenarios import chronic_lengths


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


def test_every_chronic_keeps_its_own_length_whatever_the_first_one_read(tmp_path, monkeypatch):
    # a dataset whose first chronic is shorter than the next, as generated weeks before a bundled
    # 10-day chronic are: grid2op's chronic cache would cut the second to the first one's length
    folder = tmp_path / "rte_case5_example"
    shutil.copytree(
        bundled_env_dir("rte_case5_example"), folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    for extra in sorted((folder / "chronics").iterdir())[2:]:
        shutil.rmtree(extra)
    for series in (folder / "chronics" / "00").glob("*.csv.bz2"):
        pd.read_csv(series, sep=";").head(101).to_csv(series, sep=";", index=False)
    full_rows = len(pd.read_csv(folder / "chronics" / "01" / "load_p.csv.bz2", sep=";"))
    monkeypatch.setenv("GRIDACE_DATA_DIR", str(tmp_path))

    env = make_env("rte_case5_example")

    assert chronic_lengths(env) == [("00", 100), ("01", full_rows - 1)]
