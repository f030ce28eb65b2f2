"""The stress table: every agent on ordinary, heavier and attacked days, one command; and the
settings it is made of (demand scale, opponent profiles), refused in one line when wrong."""

from __future__ import annotations

import csv
import json
import warnings

import pytest
from grid2op.Agent import DoNothingAgent
from grid2op.Runner import Runner

from ace_core.cli import main
from ace_core.errors import ConfigError
from ace_core.evaluation.stress import ROW_NAMES, run_stress, stress_rows
from ace_core.grid.envs import make_env


def test_the_runner_plays_the_heavier_days_evaluate_asks_for():
    loads = {}
    for scale in (1.0, 1.1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = make_env("l2rpn_case14_sandbox", cache_chronics=False, demand_scale=scale)
            runner_env = Runner(**env.get_params_for_runner(), agentClass=DoNothingAgent).init_env()
        runner_env.set_id(0)
        loads[scale] = float(runner_env.reset().load_p.sum())
    assert loads[1.1] == pytest.approx(1.1 * loads[1.0], rel=1e-4)


def test_a_stress_table_on_the_sandbox_grid(tmp_path):
    out = tmp_path / "stress"
    cells = run_stress(
        "l2rpn_case14_sandbox",
        "do-nothing,greedy:16",
        out,
        rows="ordinary,heavier-1.15,attacks-4h",
        nb_episode=1,
        episode_length=36,
    )
    assert [(c["row"], c["agent"]) for c in cells] == [
        (row, agent)
        for row in ("ordinary", "heavier-1.15", "attacks-4h")
        for agent in ("do-nothing", "greedy:16")
    ]
    by = {(c["row"], c["agent"]): c for c in cells}
    assert by[("ordinary", "do-nothing")]["simulate_calls_per_step"] == 0
    assert by[("attacks-4h", "do-nothing")]["attacks"] >= 1  # first storm attack at step 12
    assert by[("ordinary", "do-nothing")]["attacks"] == 0
    markdown = (out / "stress.md").read_text()
    assert "| heavier-1.15: loads and production x1.15 |" in markdown and " sims)" in markdown
    with open(out / "stress.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 6
    # each row is a table of its own, reused when the command runs again
    report = out / "heavier-1.15" / "do-nothing" / "report.json"
    before = report.stat().st_mtime_ns
    run_stress(
        "l2rpn_case14_sandbox",
        "do-nothing,greedy:16",
        out,
        rows="heavier-1.15",
        nb_episode=1,
        episode_length=36,
    )
    assert report.stat().st_mtime_ns == before


def test_grids_without_attacked_lines_play_the_other_rows():
    played, skipped = stress_rows("rte_case5_example")
    assert [r.name for r in played] == [n for n in ROW_NAMES if n.split("-")[0] not in ("attacks", "uneven")]
    assert {r.name for r in skipped} == {"attacks-daily", "attacks-4h", "attacks-2h"}
    with pytest.raises(ConfigError, match="env 'rte_case5_example' cannot play stress row"):
        stress_rows("rte_case5_example", "ordinary,attacks-4h")


def test_the_uneven_rows_are_played_when_asked_for_by_name():
    assert not any(row.name.startswith("uneven") for row in stress_rows("l2rpn_case14_sandbox")[0])
    (row,) = stress_rows("l2rpn_case14_sandbox", "uneven-1.10")[0]
    assert (row.demand_scale, row.demand_spread) == (1.10, 0.05)


def test_an_uneven_row_plays_another_day_under_each_grid_seed(tmp_path):
    """The heavier row plays one day twice under two grid seeds; the uneven row two days."""
    cells = run_stress(
        "rte_case14_realistic",
        "do-nothing",
        tmp_path / "stress",
        rows="heavier-1.15,uneven-1.15",
        split="validation",
        seeds=(0, 1),
        nb_episode=1,
        episode_length=288,
    )
    rewards = {}
    for cell in cells:
        report = tmp_path / "stress" / cell["row"] / "do-nothing" / "report.json"
        rewards[cell["row"]] = [e["reward"] for e in json.loads(report.read_text())["episodes"]]
    assert rewards["heavier-1.15"][0] == rewards["heavier-1.15"][1]
    assert rewards["uneven-1.15"][0] != rewards["uneven-1.15"][1]
    assert (
        "each load's share drawn per grid seed (spread 0.05)"
        in (tmp_path / "stress" / "uneven-1.15" / "table.md").read_text()
    )


UNREACHABLE = (
    ["evaluate", "--env", "l2rpn_case14_sandbox", "--agent", "do-nothing", "--ray-address", "127.0.0.1:9"],
    "no Ray cluster answers at 127.0.0.1:9",
)
"""a cluster address nothing answers"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["experiment", "stress", "--env", "l2rpn_case14_sandbox", "--rows", "hail"],
            "unknown stress row(s) ['hail']",
        ),
        (
            ["experiment", "stress", "--env", "rte_case5_example", "--rows", "attacks-2h"],
            "cannot play stress row(s) attacks-2h",
        ),
        (
            ["evaluate", "--env", "l2rpn_case14_sandbox", "--agent", "do-nothing", "--demand-scale", "2.5"],
            "demand scale 2.5 is out of range; accepted: 0.8 to 1.3",
        ),
        (
            ["evaluate", "--env", "l2rpn_case14_sandbox", "--agent", "do-nothing", "--demand-spread", "0.5"],
            "demand spread 0.5 is out of range; accepted: 0.0 to 0.3",
        ),
        (
            [
                "evaluate",
                "--env",
                "l2rpn_case14_sandbox",
                "--agent",
                "do-nothing",
                "--opponent",
                "storm:rate=2",
            ],
            "unknown setting 'rate'; accepted: duration, cooldown, budget, initial",
        ),
        (
            [
                "experiment",
                "table",
                "--env",
                "l2rpn_case14_sandbox",
                "--agents",
                "do-nothing",
                "--opponent",
                "gale",
            ],
            "unknown opponent 'gale'",
        ),
        UNREACHABLE,
    ],
)
def test_bad_stress_input_exits_2_with_one_line_and_leaves_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists() and not list(tmp_path.iterdir())


def test_an_unreachable_ray_address_is_refused_even_with_ray_already_up(local_ray, tmp_path, capsys):
    # refused, not played on the Ray this process has up
    test_bad_stress_input_exits_2_with_one_line_and_leaves_nothing(tmp_path, capsys, *UNREACHABLE)
