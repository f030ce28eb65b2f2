"""Two episodes of one day compared from grid2op's own EpisodeData: two real evaluations through
the Runner (doing nothing and the greedy expert, 30 steps), their KPIs side by side, the frames of
the synchronised diagrams, and the refusals (another day, a folder that is not an episode, one
outside the allowed roots)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ace_core.cli import main
from ace_core.evaluation.day_compare import (
    EpisodeError,
    action_changes,
    compare_day,
    episode_day,
    open_episode,
)
from ace_core.evaluation.runner import evaluate

ENV = "l2rpn_case14_sandbox"
LENGTH = 30
GREEDY = "greedy:budget=200,threshold=0.5"
"""an expert that acts whenever a move lowers max rho: real topology changes within 30 steps"""


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("day")
    reports = {
        # two scenarios: the first is the greedy's day, the second another day
        "do-nothing": evaluate(
            ENV, "do-nothing", "test", nb_episode=2, out_dir=root / "dn", episode_length=LENGTH
        ),
        "greedy": evaluate(ENV, GREEDY, "test", nb_episode=1, out_dir=root / "greedy", episode_length=LENGTH),
    }
    day, other = (e["scenario"] for e in reports["do-nothing"]["episodes"])
    return {
        "root": root,
        "reports": reports,
        "do-nothing": root / "dn" / "episodes" / "seed0" / day,
        "other-day": root / "dn" / "episodes" / "seed0" / other,
        "greedy": root / "greedy",  # the evaluation's own folder: it holds one episode
    }


def test_kpis_side_by_side_count_each_agents_real_actions_per_substation(evaluations):
    result = compare_day(evaluations["do-nothing"], evaluations["greedy"])
    nothing, greedy = result["a"]["kpis"], result["b"]["kpis"]
    assert result["env"] == ENV and nothing["day"] == greedy["day"] == result["day"]
    for kpis in (nothing, greedy):
        assert kpis["steps_survived"] == kpis["length"] == LENGTH and kpis["survival"] == 1.0
        assert not kpis["game_over"]
        assert (
            kpis["decision_ms"]["recorded"] and kpis["decision_ms"]["p95"] >= kpis["decision_ms"]["p50"] > 0
        )
        assert kpis["steps_overloaded"] <= kpis["overload_line_steps"]
    assert (
        nothing["action_steps"] == nothing["topology_actions"] == 0
        and nothing["actions_per_substation"] == {}
    )
    # the greedy's steps that changed the grid are those its own report counted as real actions
    report = evaluations["reports"]["greedy"]
    real_actions = round(report["real_action_share"] * report["decisions"])
    assert greedy["action_steps"] == real_actions > 0
    assert sum(greedy["actions_per_substation"].values()) == greedy["topology_actions"] >= real_actions
    assert all(name.startswith("substation ") for name in greedy["actions_per_substation"])
    # the expert simulates candidates at every step; doing nothing decides at once
    assert greedy["decision_ms"]["p50"] > nothing["decision_ms"]["p50"]


def test_frames_follow_every_state_with_the_action_that_led_to_it(evaluations):
    def state_of(obs, step):
        return {"step": step, "max_rho": float(obs.rho.max()), "bus": [int(b) for b in obs.topo_vect]}

    result = compare_day(evaluations["do-nothing"], evaluations["greedy"], state_of=state_of)
    nothing, greedy = result["a"]["frames"], result["b"]["frames"]
    assert len(nothing) == len(greedy) == LENGTH + 1
    assert nothing[0]["bus"] == greedy[0]["bus"]  # the same day starts from the same grid
    assert nothing[0]["applied"] == greedy[0]["applied"] == "start of the day"
    assert {frame["applied"] for frame in nothing[1:]} == {"no action"}
    moved = [frame for frame in greedy[1:] if frame["touched"]]
    assert len(moved) == result["b"]["kpis"]["action_steps"]
    assert all("buses changed" in frame["applied"] for frame in moved)


def test_two_episodes_of_different_days_are_refused_naming_both(evaluations):
    first, other = open_episode(evaluations["do-nothing"]), open_episode(evaluations["other-day"])
    assert episode_day(first) != episode_day(other)
    with pytest.raises(EpisodeError) as refused:
        compare_day(evaluations["greedy"], evaluations["other-day"])
    message = str(refused.value)
    assert str(episode_day(first)) in message and str(episode_day(other)) in message
    assert "same env and day" in message


def test_bad_folders_are_refused_saying_what_is_accepted(evaluations, tmp_path):
    accepted = "accepted: a folder written by grid2op's Runner"
    with pytest.raises(EpisodeError, match=f"is not a folder; {accepted}"):
        open_episode(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("not an episode")
    with pytest.raises(EpisodeError, match=f"holds no episode; {accepted}"):
        open_episode(tmp_path)
    with pytest.raises(EpisodeError, match="holds 2 episodes .*name one of their folders"):
        open_episode(evaluations["root"] / "dn")
    # outside the roots: refused whether or not it exists, named as the caller names it
    with pytest.raises(EpisodeError, match="^episode A is outside the folders episodes may be opened from"):
        open_episode(evaluations["greedy"], roots=[tmp_path], label="episode A")
    with pytest.raises(EpisodeError, match="outside the folders"):
        open_episode(tmp_path / ".." / "elsewhere", roots=[tmp_path])
    escape = tmp_path / "link"
    escape.symlink_to(evaluations["greedy"])  # a link inside a root that leads out of it
    with pytest.raises(EpisodeError, match="outside the folders"):
        open_episode(escape, roots=[tmp_path])
    damaged = tmp_path / "damaged"
    shutil.copytree(evaluations["do-nothing"], damaged)
    next(damaged.glob("*/observations.npz")).unlink()
    with pytest.raises(EpisodeError, match="could not be read as EpisodeData"):
        open_episode(damaged)


def test_only_real_changes_count(sandbox):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    sub_of = np.repeat(np.arange(sandbox.n_sub), sandbox.sub_info)
    start = int(np.sum(sandbox.sub_info[:1]))
    same = sandbox.action_space({"set_bus": {"substations_id": [(1, obs.topo_vect[start : start + 6])]}})
    assert not action_changes(same, obs, sub_of).any  # the buses they are on already
    split = sandbox.action_space({"set_bus": {"substations_id": [(1, [1, 1, 2, 2, 1, 1])]}})
    assert action_changes(split, obs, sub_of).substations == [1]
    # refused by the grid (illegal, played as doing nothing): the next state shows no change
    assert not action_changes(split, obs, sub_of, after=obs).any
    applied, *_ = sandbox.step(split)
    assert action_changes(split, obs, sub_of, after=applied).substations == [1]
    sandbox.reset(seed=0, options={"time serie id": 0})
    connected = sandbox.action_space({"set_line_status": [(3, 1)]})
    assert not action_changes(connected, obs, sub_of).any
    off, *_ = sandbox.step(sandbox.action_space({"set_line_status": [(3, -1)]}))
    reconnect = action_changes(sandbox.action_space({"set_bus": {"lines_or_id": [(3, 1)]}}), off, sub_of)
    assert reconnect.reconnected == [3] and reconnect.substations == []  # a reconnection, not a move
    sandbox.reset(seed=0, options={"time serie id": 0})


def test_cli_prints_both_episodes_kpis_as_json(evaluations, capsys):
    assert main(["compare-day", str(evaluations["do-nothing"]), str(evaluations["greedy"])]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["env"] == ENV and printed["a"]["action_steps"] == 0 < printed["b"]["action_steps"]
    assert main(["compare-day", str(evaluations["greedy"]), str(evaluations["other-day"])]) == 2
    assert "same env and day" in capsys.readouterr().err
    assert main(["compare-day", str(Path("/nonexistent")), str(evaluations["greedy"])]) == 2


def test_a_game_over_counts_the_steps_played_and_leaves_out_grid2ops_empty_last_state(tmp_path):
    # doing nothing under 1.2 x the demand fails before the end of its first test day
    out = tmp_path / "stressed"
    (played,) = evaluate(ENV, "do-nothing", "test", nb_episode=1, out_dir=out, demand_scale=1.2)["episodes"]
    assert played["steps_survived"] < played["max_steps"]
    result = compare_day(out, out, state_of=lambda obs, step: {"step": step, "max_rho": float(obs.rho.max())})
    kpis, frames = result["a"]["kpis"], result["a"]["frames"]
    assert kpis["game_over"] and kpis["length"] == played["max_steps"]
    assert kpis["steps_survived"] == played["steps_survived"] == len(frames)
    assert frames[-1]["max_rho"] > 0  # the last state drawn is the grid's, not the blackout's zeros
    assert kpis["steps_overloaded"] >= 1  # what brought it down
