"""A grid that keeps every step's observation (ace_core/live/history.py): a what-if at any step
played is the what-if a fresh replay of that step gives, cooldowns and topology changes included,
and it never moves the grid."""

from __future__ import annotations

import pytest
from grid2op.Parameters import Parameters

from ace_core.grid.envs import make_env
from ace_core.live import DO_NOTHING, GridHistory, LiveActionError, LiveGrid, parse_action

ENV = "l2rpn_case14_sandbox"
PLAYED = {
    2: {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]},
    5: {"kind": "line", "line": 4, "status": "disconnect"},
    7: {"kind": "topology", "substation": 5, "set": [[6, 2], [3, 2]]},
}
"""operators' actions played at these steps (nothing at the others)"""
PROBES = [
    {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]},
    {"kind": "line", "line": 4, "status": "connect"},
    {"kind": "line", "line": 4, "status": "disconnect"},
    {"kind": "topology", "substation": 5, "set": [[6, 1], [3, 1]]},
    {"kind": "index", "index": 30},
    {"kind": "nothing"},
]


def cooldown_env():
    """The sandbox with grid2op's own cooldowns switched on (the bundled copy has none)."""
    params = Parameters()
    params.NB_TIMESTEP_COOLDOWN_SUB = 3
    params.NB_TIMESTEP_COOLDOWN_LINE = 3
    return make_env(ENV, param=params)


@pytest.fixture(scope="module")
def envs():
    return cooldown_env(), cooldown_env()


def play(grid_or_history, step: int) -> None:
    spec = PLAYED.get(step)
    space = grid_or_history.grid.space if isinstance(grid_or_history, GridHistory) else grid_or_history.space
    grid_or_history.advance(parse_action(spec, space) if spec else DO_NOTHING)


def test_a_what_if_at_any_step_played_is_the_what_if_of_a_fresh_replay(envs):
    kept_env, fresh_env = envs
    history = GridHistory(LiveGrid(ENV, 0, 0, None, env=kept_env))
    for step in range(1, 11):
        play(history, step)
    played_steps = kept_env.nb_time_step

    fresh = LiveGrid(ENV, 0, 0, None, env=fresh_env)
    fresh.reset()
    refusals = set()
    for step in range(11):
        if step:
            play(fresh, step)
        for spec in PROBES:
            kept = history.what_if(step, parse_action(spec, history.grid.space)).to_dict()
            assert kept == fresh.what_if(parse_action(spec, fresh.space)).to_dict(), (step, spec)
            refusals.add(kept["refusal"].split(" for ")[0])
    # the kept states carry the cooldowns and the open line of their step
    assert {
        "substation 1 is in cooldown",
        "line 1-4 is in cooldown",
        "line 1-4 is already disconnected",
    } <= refusals
    assert kept_env.nb_time_step == played_steps and history.step_index == 10  # what-ifs never step


def test_the_last_step_of_a_finished_scenario_refuses_and_unplayed_steps_are_refused(envs):
    history = GridHistory(LiveGrid(ENV, 0, 0, None, env=envs[0], max_steps=4))
    while not history.grid.done:
        history.advance()
    assert history.step_index == 4
    assert history.what_if(4, DO_NOTHING).refusal == "the scenario is over; no action can be played"
    assert history.what_if(3, DO_NOTHING).legal
    for step in (-1, 5):
        with pytest.raises(LiveActionError, match=rf"step {step} has not been played here; accepted: 0 to 4"):
            history.what_if(step, DO_NOTHING)
