"""More days for an env: chronix2grid's weeks, generated into a data folder make_env reads."""

import bz2
import os
import sys
from pathlib import Path

import pytest

from ace_core.cli import main
from ace_core.grid.days.digest import file_digests, week_digest
from ace_core.grid.days.generate import (
    DEFAULT_DAYS_PYTHON,
    generate_days,
    prepare_env_folder,
    week_name,
    week_seeds,
)
from ace_core.grid.envs import bundled_env_dir, dataset_fingerprint, env_dir, make_env
from ace_core.grid.scenarios import chronic_lengths, scenarios
from ace_core.imitation.mining import MineSpec

ENV = "l2rpn_idf_2023"
DAYS_PYTHON = Path(os.environ.get("GRIDACE_DAYS_PYTHON") or DEFAULT_DAYS_PYTHON)


def _nothing_written(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--env", "rte_case14_realistic", "--weeks", "1"], "accepted: "),
        (["--env", ENV, "--weeks", "0"], "accepted: 1 to 520"),
        (["--env", ENV, "--weeks", "1", "--steps", "3"], "accepted: 12 or more"),
    ],
)
def test_bad_requests_exit_2_naming_what_is_accepted_and_write_nothing(argv, named, data_dir, capsys):
    assert main(["days", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and named in err and len(err.strip().splitlines()) == 1
    if argv[1] == "rte_case14_realistic":
        assert ENV in err  # the env that can grow is named
    assert _nothing_written(data_dir)


def test_without_the_days_interpreter_it_says_how_to_make_one(data_dir, monkeypatch, capsys):
    monkeypatch.setenv("GRIDACE_DAYS_PYTHON", str(data_dir.parent / "no-such-python"))
    assert main(["days", "--env", ENV, "--weeks", "1"]) == 2
    assert "make days-venv" in capsys.readouterr().err
    assert _nothing_written(data_dir)


def test_a_week_that_fails_to_generate_leaves_only_the_bundled_days(data_dir, monkeypatch, capsys):
    # GridACE's own interpreter has no chronix2grid: the generator fails as a broken install would
    monkeypatch.setenv("GRIDACE_DAYS_PYTHON", sys.executable)
    assert main(["days", "--env", ENV, "--weeks", "1", "--steps", "12"]) == 2
    err = capsys.readouterr().err
    assert "generating 2035-01-01_gridace0w000 failed" in err and "chronix2grid" in err
    folder = data_dir / ENV
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []
    bundled = sorted(p.name for p in bundled_env_dir(ENV).joinpath("chronics").iterdir())
    assert sorted(p.name for p in (folder / "chronics").iterdir()) == bundled


def test_a_data_folder_is_read_unless_grid2op_is_forced_onto_its_bundled_copies(data_dir, monkeypatch):
    folder = prepare_env_folder(ENV, data_dir)
    assert env_dir(ENV) == folder and dataset_fingerprint(ENV) != ""
    monkeypatch.setenv("_GRID2OP_FORCE_TEST", "1")
    assert env_dir(ENV) == bundled_env_dir(ENV) and dataset_fingerprint(ENV) == ""


def test_a_weeks_seeds_depend_on_the_seed_and_the_week_only():
    assert week_seeds(0, 3) == week_seeds(0, 3)
    assert len({week_seeds(0, 3), week_seeds(0, 4), week_seeds(1, 3)}) == 3
    assert week_name("2035-01-22", 0, 3) == "2035-01-22_gridace0w003"


@pytest.mark.skipif(not DAYS_PYTHON.is_file(), reason="needs the days interpreter: make days-venv")
def test_generated_days_join_the_env_resume_and_key_the_mines_apart(data_dir, monkeypatch):
    bundled = chronic_lengths(make_env(ENV, cache_chronics=False))
    bundled_mine = MineSpec(env=ENV).digest()
    # a run killed mid-week left its staging folder: the next run starts that week afresh
    name = week_name("2035-01-01", 7, 0)
    stale = prepare_env_folder(ENV, data_dir) / f".staging-{name}"
    stale.mkdir()
    (stale / "load_p.csv.bz2").write_text("half-written")

    summary = generate_days(ENV, 1, seed=7, steps=36, log=lambda _line: None)

    assert summary["generated"] == [name] and not stale.exists()
    env = make_env(ENV, cache_chronics=False)
    lengths = dict(chronic_lengths(env))
    assert set(lengths) == {n for n, _ in bundled} | {name}
    assert lengths[name] >= 36  # chronix2grid keeps a step past the end for the forecasts
    assert any(
        s.chronic_name == name for split in ("train", "validation", "test") for s in scenarios(env, split, 12)
    )
    # the generated week plays: loads and productions are there and the grid holds its first steps
    obs = env.reset(seed=0, options={"time serie id": sorted(lengths).index(name)})
    assert obs.load_p.sum() > 0 and obs.gen_p.sum() > 0
    # a mine of the grown env is not the bundled env's mine
    assert MineSpec(env=ENV).digest() != bundled_mine
    monkeypatch.delenv("GRIDACE_DATA_DIR")
    assert MineSpec(env=ENV).digest() == bundled_mine

    monkeypatch.setenv("GRIDACE_DATA_DIR", str(data_dir))
    again = generate_days(ENV, 1, seed=7, steps=36, log=lambda _line: None)
    assert again["generated"] == [] and again["already_there"] == [name]
    # the week's fingerprint, to compare two machines' days: the same when read again, another
    # when a series changes
    assert again["digests"] == summary["digests"] and len(summary["digests"][name]) == 16
    week = prepare_env_folder(ENV, data_dir) / "chronics" / name
    # chronix2grid's report holds its wall-clock time: another making of the same days differs
    # there and nowhere else, and keeps the digest
    report = week / "generation_quality.json"
    assert report.is_file()
    made = report.read_text()
    remade = made.replace('"generation_time": ', '"generation_time": 1', 1)
    assert remade != made
    report.write_text(remade)
    assert week_digest(week) == summary["digests"][name]
    load = week / "load_p.csv.bz2"
    assert "load_p.csv.bz2" in file_digests(week)
    load.write_bytes(bz2.compress(bz2.decompress(load.read_bytes()).replace(b".", b",", 1)))
    assert week_digest(week) != summary["digests"][name]
