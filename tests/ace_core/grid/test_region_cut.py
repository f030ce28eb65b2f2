"""The 36-bus grids' days: weeks of the whole 118-bus grid, generated and cut to the region."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ace_core.errors import ConfigError
from ace_core.grid.days import region_cut
from ace_core.grid.days.case118_source import SOURCES, WCCI_2020_LOAD_SCALE, chronix2grid_case_dir
from ace_core.grid.days.generate import DEFAULT_DAYS_PYTHON, generate_days, week_name
from ace_core.grid.envs import bundled_env_dir, make_env
from ace_core.grid.scenarios import chronic_lengths

ENV = "l2rpn_neurips_2020_track1"
WCCI = "l2rpn_wcci_2020"  # the same region, under other names
DAYS_PYTHON = Path(os.environ.get("GRIDACE_DAYS_PYTHON") or DEFAULT_DAYS_PYTHON)
needs_generator = pytest.mark.skipif(
    not DAYS_PYTHON.is_file(), reason="needs the days interpreter: make days-venv"
)


def _bundled_chronics(env: str = ENV) -> list[str]:
    return sorted(p.name for p in bundled_env_dir(env).joinpath("chronics").iterdir() if p.is_dir())


def test_the_wcci_grid_is_the_neurips_region_under_other_names():
    names = SOURCES[WCCI].names

    assert len(names) == 37 + 22 + 59
    # its own loads, its lines to the rest of the grid (loads there too) and its generators
    assert names["load_0_0"] == "load_32_26" and names["load_0_1"] == "interco_14_32"
    assert names["load_35_33"] == "interco_68_74" and names["gen_1_0"] == "gen_33_16"
    assert names["2_3_0"] == "34_35_110" and names["4_5_55"] == "37_36_179"  # a transformer
    assert SOURCES[ENV].names == {}


def test_a_region_whose_elements_do_not_sit_where_the_named_ones_do_is_refused():
    wcci, neurips = (region_cut.elements(bundled_env_dir(env)) for env in (WCCI, ENV))
    shuffled = region_cut.Elements(wcci.loads, wcci.gens, wcci.lines[1:] + wcci.lines[:1])

    with pytest.raises(
        ConfigError, match="not the same region: line 2_4_1 does not join what 34_35_110 joins"
    ):
        region_cut.whole_grid_names(shuffled, neurips)
    with pytest.raises(ConfigError, match="not the same region: 37 loads, 22 gens, 58 lines"):
        region_cut.whole_grid_names(region_cut.Elements(wcci.loads, wcci.gens, wcci.lines[1:]), neurips)


@needs_generator
def test_a_generated_week_of_the_whole_grid_joins_the_region_and_plays(data_dir):
    lines = []
    summary = generate_days(WCCI, 1, seed=5, steps=24, log=lines.append)

    name = week_name("2012-01-02", 5, 0)
    assert summary["generated"] == [name]
    # played with the cut's series, every line of the region carries the whole grid's flow, and
    # no forecast puts a generator above its Pmax
    report = json.loads(lines[0])
    assert report["flow_gap_mw"] < 0.1 and report["forecast_rows_above_pmax"] == 0
    env = make_env(WCCI, cache_chronics=False)
    lengths = dict(chronic_lengths(env))
    assert set(lengths) == set(_bundled_chronics(WCCI)) | {name} and lengths[name] >= 24
    obs = env.reset(seed=0, options={"time serie id": sorted(lengths).index(name)})
    # the region's own loads and generators, and its eight lines to the rest of the grid as loads
    names = SOURCES[WCCI].names
    interco = np.array([names[n].startswith(region_cut.INTERCO) for n in env.name_load])
    assert interco.sum() == 8 and np.all(obs.load_p[~interco] > 0) and obs.gen_p.sum() > 0
    assert np.any(obs.load_p[interco] != 0) and obs.rho.max() < 1.0
    for _ in range(12):
        obs, _, done, _ = env.step(env.action_space())
        assert not done
    # the week carries the env's own model of planned maintenance, which grid2op draws from
    week = data_dir / WCCI / "chronics" / name
    assert (week / "maintenance_meta.json").read_bytes() == (
        bundled_env_dir(WCCI) / "chronics" / _bundled_chronics(WCCI)[0] / "maintenance_meta.json"
    ).read_bytes()
    # the whole grid's inputs are made once, outside the envs make_env lists, with WCCI's loads
    source = data_dir / ".sources" / "case118_wcci_2020"
    case = pd.read_csv(chronix2grid_case_dir(DAYS_PYTHON) / "loads_charac.csv")["Pmax"]
    scaled = pd.read_csv(source / "loads_charac.csv")["Pmax"]
    assert np.allclose(scaled, case * WCCI_2020_LOAD_SCALE, atol=0.01)


@needs_generator
def test_a_week_whose_cut_does_not_carry_the_whole_grids_flows_is_refused_and_the_run_goes_on(
    data_dir, monkeypatch
):
    monkeypatch.setattr(region_cut, "MAX_FLOW_GAP_MW", -1.0)  # no cut can pass
    lines = []
    summary = generate_days(ENV, 1, seed=6, steps=12, log=lines.append)

    name = week_name("2012-01-02", 6, 0)
    assert summary["generated"] == [] and summary["refused"] == [name]
    assert "does not carry the whole grid's flows: line" in json.loads(lines[0])["refused"]
    folder = data_dir / ENV
    assert sorted(p.name for p in (folder / "chronics").iterdir()) == _bundled_chronics()
    assert not [p for p in folder.iterdir() if p.name.startswith(".staging")]
