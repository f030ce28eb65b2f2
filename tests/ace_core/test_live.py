"""The live grid behind the operator's console (ace_core/live/), on real grid2op envs:
stepping through a scenario, the recommendation pipeline's cards with their simulated effect,
replaying applied actions after a restart, and the refusals (unknown names, cooldowns, islands)
with the reason an operator can act on. What-if of any action: test_live_what_if.py."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from grid2op.Parameters import Parameters

from ace_core.grid.envs import make_env
from ace_core.grid.names import ElementNames
from ace_core.live import (
    DO_NOTHING,
    LiveAction,
    LiveActionError,
    LiveGrid,
    alarms_between,
    apply_delta,
    card_dict,
    lines_switched_off,
    make_live_env,
    n1_baseline,
    parse_action,
    security_alarms,
    state_delta,
    to_grid2op,
    untrained_policy,
)

ENV = "l2rpn_case14_sandbox"
COOLDOWN = 3
STRESSED_LINE = 9


@pytest.fixture(scope="module")
def module_env():
    return make_live_env(ENV)  # with the live console's one-hour forecasts


@pytest.fixture
def env(module_env):
    module_env.reset()  # a test that played a scenario to its end leaves the env refusing get_obs()
    return module_env


@pytest.fixture(scope="module")
def policy(module_env, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("live-policy")
    return untrained_policy(ENV, folder / "checkpoint.pt", hidden=32, env=module_env)


@pytest.fixture(scope="module")
def stressed():
    """The sandbox with line 9's thermal limit cut by a quarter: overloaded from the first step."""
    env = make_live_env(ENV)
    limits = env.get_thermal_limit().copy()
    limits[STRESSED_LINE] *= 0.75
    env.set_thermal_limit(limits)
    return env


@pytest.fixture(scope="module")
def cooldown_env():
    """The sandbox with grid2op's own cooldowns switched on (the bundled copy has none)."""
    params = Parameters()
    params.NB_TIMESTEP_COOLDOWN_SUB = COOLDOWN
    params.NB_TIMESTEP_COOLDOWN_LINE = COOLDOWN
    return make_env(ENV, param=params)


def act(spec: dict, grid: LiveGrid) -> LiveAction:
    return parse_action(spec, grid.space)


def simulated_rho(grid: LiveGrid, action: LiveAction) -> tuple[np.ndarray, bool, dict]:
    """grid2op's own answer for ``action`` from the grid's current observation."""
    sim_obs, _, done, info = grid.obs.simulate(to_grid2op(action, grid.space, grid.env.action_space))
    return np.asarray(sim_obs.rho), done, info


def relieved_and_new(before: np.ndarray, after: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    relieved = tuple(int(i) for i in np.flatnonzero((before >= 1.0) & (after < 1.0)))
    new = tuple(int(i) for i in np.flatnonzero((before < 1.0) & (after >= 1.0)))
    return relieved, new


# ----- stepping -------------------------------------------------------------------------------
def test_stepping_plays_the_scenario_to_its_end(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env, max_steps=5)
    assert (grid.scenario.chronic_index, grid.scenario.start, grid.scenario.length) == (0, 0, 5)
    first = grid.reset()
    assert (first.step, first.done, first.finished, first.cards) == (0, False, False, [])
    assert first.text.startswith("Step ")
    state = first.state
    assert state["step"] == 0 and len(state["rho"]) == 20 and len(state["cooldown_sub"]) == 14
    assert state["line_status"] == [1] * 20 and state["overloads"] == []
    assert state["max_rho"] == round(float(grid.obs.rho.max()), 4)

    results = [grid.step() for _ in range(5)]
    assert [r.step for r in results] == [1, 2, 3, 4, 5] and grid.step_index == 5
    times = [first.state["time"]] + [r.state["time"] for r in results]
    assert times == sorted(set(times))  # one grid step of the chronic per live step
    assert not any(r.done for r in results[:-1])
    last = results[-1]
    assert last.done and last.finished and last.reason == "" and last.text == ""
    with pytest.raises(LiveActionError, match=r"the scenario is over \(step 5\); nothing more can be played"):
        grid.step()
    assert grid.what_if(DO_NOTHING).refusal == "the scenario is over; no action can be played"

    # the states are grid2op's: the same scenario played directly gives the same flows
    obs = env.reset(seed=0, options=grid.scenario.reset_options())
    for result in results[:4]:
        obs, *_ = env.step(env.action_space({}))
        assert result.state["rho"] == [round(float(r), 3) for r in obs.rho]


def test_an_unknown_scenario_is_refused_with_the_accepted_range(env):
    with pytest.raises(
        LiveActionError, match=r"l2rpn_case14_sandbox: scenario 999 does not exist; accepted: 0 to \d+"
    ):
        LiveGrid(ENV, 999, 0, None, env=env)


def test_a_session_can_open_where_an_incident_began(env):
    """Starting ``start_step`` steps into a day is the day played to that step with nothing done:
    the same time, the same flows, and the session's own steps counted from there."""
    whole = LiveGrid(ENV, 1, 0, None, env=env)
    length, start = whole.scenario.length, whole.scenario.start
    whole.reset()
    for _ in range(7):
        whole.step()
    played = whole.state
    later = LiveGrid(ENV, 1, 0, None, env=env, start_step=7, max_steps=3)
    assert (later.scenario.start, later.scenario.length) == (start + 7, 3)
    opened = later.reset().state
    assert opened["step"] == 0 and opened["time"] == played["time"] and opened["rho"] == played["rho"]
    assert [later.step().step for _ in range(3)] == [1, 2, 3] and later.done
    with pytest.raises(
        LiveActionError,
        match=rf"start step {length - 1} is outside scenario 1 \({length} steps\); accepted: 0 to {length - 2}",
    ):
        LiveGrid(ENV, 1, 0, None, env=env, start_step=length - 1)


def test_played_actions_change_the_grid_and_deltas_carry_the_changes(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    before = grid.reset().state
    action = act({"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}, grid)
    after = grid.step(action).state
    start = int(grid.space.sub_start[1])
    assert after["bus"][start + 2] == after["bus"][start + 3] == 2
    delta = state_delta(before, after)
    assert delta["delta"] and "bus" not in delta
    assert delta["changes"]["bus"] == [[start + 2, 2], [start + 3, 2]]
    assert apply_delta(before, delta) == after
    assert apply_delta(before, state_delta(None, after)) == after


# ----- recommendations ------------------------------------------------------------------------
def test_recommendations_are_the_pipeline_s_never_worse_than_doing_nothing(stressed, policy):
    grid = LiveGrid(ENV, 0, 0, policy, env=stressed, k=3)
    result = grid.reset()
    before = np.asarray(grid.obs.rho)
    assert before.max() >= 1.0 and result.state["overloads"] == [STRESSED_LINE]
    assert result.timings["total_ms"] >= result.timings["policy_ms"] > 0

    # doing nothing is always simulated and shown as the reference, with the grid's security
    assessment = result.assessment
    reference = assessment["reference"]
    assert reference["description"] == "do nothing" and reference["max_rho_after"] >= 1.0
    assert assessment["forecast"]["kind"] == "perfect" and assessment["forecast"]["horizon_steps"] == 12
    assert assessment["security"]["n1"]["screened"] == 20 and assessment["security"]["alarms"]

    # the policy's top 3 are all considered: shown, safe but ranked below the 3 cards shown, or
    # rejected with the reason
    ranked = grid.sac.policy(grid.features(grid.obs), grid.space.top_mask(grid.obs)).top_k(3)
    assert 0 < len(result.cards) <= 3 and [c.rank for c in result.cards] == list(
        range(1, len(result.cards) + 1)
    )
    considered = (
        {c.action_index for c in result.cards}
        | {r["action_index"] for r in assessment["rejected"]}
        | {r["action_index"] for r in assessment["also_safe"]}
    )
    assert {i for i, _ in ranked} - {0} <= considered
    assert all(r["rejected_because"] for r in assessment["rejected"])

    assert result.cards, "an expert's action clears line 9's overload"
    for card in result.cards:
        outcome = card.outcome
        assert outcome.max_rho_before == pytest.approx(before.max())
        rho, done, _ = simulated_rho(grid, LiveAction("index", index=card.action_index))
        assert not done and outcome.max_rho_after == pytest.approx(rho.max(), abs=1e-4)
        assert (outcome.lines_relieved, outcome.new_overloads) == relieved_and_new(before, rho)
        # never worse than doing nothing: no more overloaded lines, no higher max rho
        assert len(outcome.overloads_after) <= len(reference["overloads_after"])
        assert outcome.max_rho_after <= reference["max_rho_after"] + 1e-6
        shown = card_dict(card)
        assert shown["source"] in ("policy", "expert", "both", "default")
        assert (
            shown["figures"]["n1"]["screened"] == 20
            and 0 < len(shown["figures"]["look_ahead"]["max_rho"]) <= 12
        )
        # the what-if panel shows the same numbers, N-1 included, for the same action
        what_if = grid.what_if(LiveAction("index", index=card.action_index)).to_dict()
        assert what_if["legal"] and what_if["max_rho_after"] == pytest.approx(outcome.max_rho_after, abs=1e-4)
        assert (what_if["lines_relieved"], what_if["new_overloads"]) == (
            shown["lines_relieved"],
            shown["new_overloads"],
        )
        assert what_if["figures"]["n1"]["worst"] == shown["figures"]["n1"]["worst"]
    assert any(STRESSED_LINE in c.outcome.lines_relieved for c in result.cards)


def test_no_recommendations_without_a_policy_or_after_the_end(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env, max_steps=1)
    first = grid.reset()
    assert first.cards == [] and first.assessment == {} and grid.step().done


# ----- replay after a restart -----------------------------------------------------------------
def test_replaying_the_applied_actions_after_a_restart_lands_on_the_same_state(env, policy):
    env.reset(options={"time serie id": 1})  # a worker's env, left elsewhere by an earlier session
    grid = LiveGrid(ENV, 1, 3, policy, env=env)
    grid.reset()
    topology_index = next(
        i
        for i in range(grid.space.n_line + 1, grid.space.n)
        if grid.space.bits_of(i)[0] == 5 and not grid.refusal(LiveAction("index", index=i))
    )
    applied = [
        {},  # a step nobody acted on
        {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]},
        {"kind": "line", "line": 10, "status": "disconnect"},
        {"kind": "index", "index": topology_index},
        {"kind": "nothing"},
        {"kind": "line", "line": 10, "status": "connect"},
    ]
    start = grid.state
    for spec in applied:
        action = act(spec, grid) if spec else DO_NOTHING
        assert grid.refusal(action) == "", spec
        grid.step(action, with_recommendations=False)
    expected_state = grid.state
    assert expected_state["bus"] != start["bus"]  # the actions really moved the topology
    expected_next = grid.step()

    restarted = LiveGrid(ENV, 1, 3, policy)  # a fresh env from the pool: a restarted worker
    try:
        restarted.replay(applied)
        assert restarted.step_index == len(applied)
        assert restarted.state == expected_state
        next_step = restarted.step()
        assert next_step.state == expected_next.state
        assert [card_dict(c) for c in next_step.cards] == [card_dict(c) for c in expected_next.cards]
    finally:
        restarted.close()


# ----- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"kind": "topology", "substation": 99, "set": [[0, 2]]},
            "unknown substation 99; this grid has substations 0 to 13",
        ),
        (
            {"kind": "topology", "substation": 1, "set": [[9, 2]]},
            "substation 1 has no element 9; accepted: 0 to 5 (line 0-1, line 1-2, "
            "line 1-3, line 1-4, generator 0, load 0)",
        ),
        ({"kind": "topology", "substation": 1, "set": [[0, 3]]}, "bus 3 is not accepted; accepted: 1 or 2"),
        ({"kind": "topology", "substation": 1, "set": []}, "a topology action needs 'set'"),
        (
            {"kind": "topology", "substation": 1, "set": [[2, 1], [2, 2]]},
            "element 2 of substation 1 is set twice, to different buses",
        ),
        (
            {"kind": "topology", "substation": "north", "set": [[0, 2]]},
            "substation must be an integer, got 'north'",
        ),
        ({"kind": "line", "line": 77, "status": "connect"}, "unknown line 77; this grid has lines 0 to 19"),
        (
            {"kind": "line", "line": 3, "status": "open"},
            "line status 'open' is not accepted; accepted: connect, disconnect",
        ),
        ({"kind": "index", "index": 10_000}, "action index 10000 does not exist; accepted: 0 to 198"),
        ({"kind": "teleport"}, "unknown action kind 'teleport'; accepted: nothing, index, topology, line"),
        (["topology", 1], "an action must be a JSON object with a 'kind'; got list"),
    ],
)
def test_unknown_names_are_refused_with_what_is_accepted(env, spec, message):
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    with pytest.raises(LiveActionError) as refused:
        parse_action(spec, grid.space)
    assert str(refused.value).startswith(message)


def test_a_topology_action_on_a_substation_in_cooldown_is_refused(cooldown_env):
    grid = LiveGrid(ENV, 0, 0, None, env=cooldown_env)
    grid.reset()
    first = act({"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}, grid)
    assert grid.refusal(first) == ""
    grid.step(first, with_recommendations=False)
    assert grid.state["cooldown_sub"][1] == COOLDOWN

    second = act({"kind": "topology", "substation": 1, "set": [[4, 2]]}, grid)
    message = f"substation 1 is in cooldown for {COOLDOWN} more step(s)"
    assert grid.refusal(second) == message
    outcome = grid.what_if(second)
    assert not outcome.legal and outcome.refusal == message and outcome.to_dict()["max_rho_after"] is None
    _, _, info = simulated_rho(grid, second)
    assert info["is_illegal"]  # grid2op agrees: the refusal is not ours alone
    # the policy's own actions at that substation are refused for the same reason
    index = next(i for i in range(grid.space.n_line + 1, grid.space.n) if grid.space.bits_of(i)[0] == 1)
    assert grid.refusal(LiveAction("index", index=index)) == message
    # other substations are free
    assert grid.what_if(act({"kind": "topology", "substation": 5, "set": [[6, 2], [3, 2]]}, grid)).legal

    for remaining in range(COOLDOWN - 1, 0, -1):
        grid.step(with_recommendations=False)
        assert grid.refusal(second) == f"substation 1 is in cooldown for {remaining} more step(s)"
    grid.step(with_recommendations=False)
    assert grid.refusal(second) == "" and grid.what_if(second).legal


def test_a_line_switch_on_a_line_in_cooldown_is_refused(cooldown_env):
    grid = LiveGrid(ENV, 0, 0, None, env=cooldown_env)
    grid.reset()
    grid.step(act({"kind": "line", "line": 10, "status": "disconnect"}, grid), with_recommendations=False)
    assert grid.state["line_status"][10] == 0 and grid.state["cooldown_line"][10] == COOLDOWN
    assert grid.refusal(act({"kind": "line", "line": 10, "status": "disconnect"}, grid)) == (
        "line 8-9 is already disconnected"
    )
    reconnect = act({"kind": "line", "line": 10, "status": "connect"}, grid)
    outcome = grid.what_if(reconnect)
    assert not outcome.legal
    assert outcome.refusal == f"line 8-9 is in cooldown for {COOLDOWN} more step(s)"
    assert simulated_rho(grid, reconnect)[2]["is_illegal"]
    # putting the line's end on a bus would reconnect it: refused too, with the reason
    origin = grid.space.element_labels.index("line 8-9") - int(grid.space.sub_start[8])  # at substation 8
    via_bus = grid.what_if(act({"kind": "topology", "substation": 8, "set": [[origin, 1]]}, grid))
    assert via_bus.refusal == (
        f"moving line 8-9 would reconnect it, which is in cooldown for {COOLDOWN} more step(s)"
    )
    assert grid.refusal(act({"kind": "line", "line": 3, "status": "connect"}, grid)) == (
        "line 1-3 is already connected"
    )


def test_actions_that_would_island_a_node_or_cut_a_load_off_are_refused(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    grid.reset()
    cases = {
        "would island load 3 on bus 2 of substation 4 (no line connects that bus)": {
            "kind": "topology",
            "substation": 4,
            "set": [[4, 2]],
        },
        "would island generator 4 on bus 2 of substation 7 (no line connects that bus)": {
            "kind": "topology",
            "substation": 7,
            "set": [[1, 2]],
        },
        "disconnecting line 6-7 would island generator 4 on bus 1 of substation 7 "
        "(no other line connects that bus)": {"kind": "line", "line": 18, "status": "disconnect"},
    }
    for message, spec in cases.items():
        action = act(spec, grid)
        outcome = grid.what_if(action)
        assert not outcome.legal and outcome.refusal == message, spec
        _, done, info = simulated_rho(grid, action)
        assert done or info["exception"]  # grid2op would fail the grid: the refusal saves a game over
    # a load moved together with a line keeps its connection: simulated, not refused
    with_line = grid.what_if(act({"kind": "topology", "substation": 4, "set": [[1, 2], [4, 2]]}, grid))
    assert "island" not in with_line.refusal


# ----- security alarms ------------------------------------------------------------------------
def test_security_alarms_are_raised_when_the_grid_s_security_worsens():
    secure = {
        "security": {"n1": {"secure": True}, "look_ahead": {"skipped": "", "first_overload_step": None}}
    }
    insecure = {
        "security": {
            "n1": {"secure": False, "words": "not N-1 secure", "worst": {"worst_line": 13}},
            "look_ahead": {
                "skipped": "",
                "first_overload_step": 4,
                "game_over_step": None,
                "status": "overload in 20 min",
            },
            "alarms": ["not N-1 secure: losing 5_12_9 overloads 11_12_13 (315.3%)"],
        }
    }
    raised = security_alarms(secure, insecure)
    assert [(a["kind"], a["line"]) for a in raised] == [("n1_insecure", 13), ("overload_ahead", None)]
    assert raised[0]["message"].startswith("not N-1 secure: losing 5_12_9")
    assert raised[1]["message"] == "doing nothing: overload in 20 min"
    assert security_alarms(insecure, insecure) == []  # once, not at every step
    assert [a["kind"] for a in security_alarms(None, insecure)] == ["n1_insecure", "overload_ahead"]
    assert security_alarms(insecure, secure) == []
    assert {a["severity"] for a in raised} == {"warning"}


def _n1(n_overloading: int, worst: float) -> dict:
    return {
        "security": {
            "n1": {
                "secure": n_overloading == 0,
                "n_overloading": n_overloading,
                "words": f"not N-1 secure: {n_overloading} outage(s) overload a line",
                "worst": {"max_rho": worst, "worst_line": 7},
                "status": "not N-1 secure",
            },
            "look_ahead": {"skipped": "no forecast"},
        }
    }


def test_n1_alarms_fire_against_the_sessions_baseline_not_from_step_0():
    start = _n1(13, 2.90)
    baseline = n1_baseline(start)
    assert baseline == {"step": 0, "n_overloading": 13, "worst_rho": 2.90, "status": "not N-1 secure"}
    # never N-1 secure, as at the start: no alarm, at step 0 or later
    assert security_alarms(None, start, baseline) == []
    assert security_alarms(start, _n1(14, 2.95), baseline) == []
    # worse than the baseline by more than the margins: once, as a warning naming both counts
    worse = _n1(16, 2.95)
    (alarm,) = security_alarms(_n1(14, 2.95), worse, baseline)
    assert (alarm["kind"], alarm["severity"], alarm["line"]) == ("n1_insecure", "warning", 7)
    assert alarm["message"].startswith(
        "N-1 worse than at the session's start: 16 outage(s) overload a line (at step 0: 13)"
    )
    assert security_alarms(worse, _n1(17, 3.0), baseline) == []  # still worse: not again
    assert (
        security_alarms(_n1(13, 2.9), _n1(13, 3.05), baseline)[0]["kind"] == "n1_insecure"
    )  # a higher worst case


def test_state_alarms_carry_a_severity():
    state = {
        "step": 1,
        "overloads": [3],
        "rho": [0.5, 0.5, 0.5, 1.02],
        "maintenance": [1],
        "line_status": [1, 1, 0, 1],
    }
    before = {"step": 0, "overloads": [], "rho": [0.5] * 4, "maintenance": [], "line_status": [1, 1, 1, 1]}
    kinds = {(a["kind"], a["severity"]) for a in alarms_between(before, state, done=False, finished=False)}
    assert kinds == {("overload", "critical"), ("maintenance", "info"), ("line_tripped", "critical")}
    (over,) = alarms_between(state, state, done=True, finished=False, reason="x")
    assert (over["kind"], over["severity"]) == ("game_over", "critical")


def test_a_line_the_operator_switches_off_is_no_trip(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    g2op_space = grid.env.action_space
    off = act({"kind": "line", "line": 3, "status": "disconnect"}, grid)
    assert lines_switched_off(off, grid.space, g2op_space) == {3}
    assert (
        lines_switched_off(
            act({"kind": "line", "line": 3, "status": "connect"}, grid), grid.space, g2op_space
        )
        == set()
    )
    assert lines_switched_off(DO_NOTHING, grid.space, g2op_space) == set()
    before = {"step": 0, "overloads": [], "rho": [0.5] * 4, "maintenance": [], "line_status": [1, 1, 1, 1]}
    after = {**before, "step": 1, "line_status": [1, 1, 1, 0]}
    assert alarms_between(before, after, done=False, finished=False, switched_off=frozenset({3})) == []
    (tripped,) = alarms_between(before, after, done=False, finished=False)  # not the step's doing
    assert tripped["kind"] == "line_tripped"


def test_the_agents_early_warning_is_a_critical_alarm_naming_the_line_once():
    quiet = {**_n1(0, 0.8), "alert": {"level": ""}}
    warned = {
        **_n1(0, 0.8),
        "alert": {
            "level": "failure",
            "in_steps": 5,
            "lines": [9, 4],
            "words": "game over expected in 25 min whatever is done",
        },
    }
    later = {**warned, "alert": {**warned["alert"], "in_steps": 11}}
    names = ElementNames(
        lines=tuple(f"Corridor {chr(ord('A') + i)}" for i in range(10)),
        substations=(),
        generators=(),
        loads=(),
        raw_lines=tuple(f"{i}_{i + 1}_{i}" for i in range(10)),
    )
    assert security_alarms(quiet, later, names=names) == []  # an hour ahead: not an alarm yet
    (alarm,) = security_alarms(later, warned, names=names)
    assert (alarm["kind"], alarm["severity"], alarm["line"]) == ("failure_ahead", "critical", 9)
    # the lines by their one name, as the other alarms, the cards and the diagram call them
    assert alarm["message"] == (
        "early warning: game over expected in 25 min whatever is done; lines at risk: Corridor J, Corridor E"
    )
    assert not re.search(r"\b(?:9|4|9_10_9|4_5_4)\b", alarm["message"])
    assert security_alarms(warned, warned) == []  # once, while it lasts
    overload_only = {
        **_n1(0, 0.8),
        "alert": {"level": "overload", "lines": [9], "words": "overload expected"},
    }
    assert security_alarms(quiet, overload_only) == []  # an overload the cards can hold is not an alarm


def test_the_state_names_the_lines_under_attack_while_the_attack_lasts():
    """A storm on the sandbox attacks a line from step 12 (the profile's first attack): the states
    list it under ``attacked`` (the diagram's purple star) and list nothing before."""
    env = make_env("l2rpn_case14_sandbox", cache_chronics=False, opponent="storm")
    grid = LiveGrid("l2rpn_case14_sandbox", 0, 0, None, env=env)
    grid.reset()
    attacked, status = {}, {}
    for _ in range(20):
        grid.step(DO_NOTHING, with_recommendations=False)
        attacked[grid.state["step"]] = grid.state["attacked"]
        status[grid.state["step"]] = grid.state["line_status"]
        if grid.done:
            break
    under = {step: lines for step, lines in attacked.items() if lines}
    assert under, attacked
    first = min(under)
    assert all(not attacked[step] for step in attacked if step < first)
    assert all(status[first][line] == 0 for line in under[first])  # the attack took the line out
