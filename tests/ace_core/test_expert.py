"""The greedy expert: its settings, a search over every topology of the loaded substations, the
tie-break, reconnect first, going back to the reference topology, and no-ops folded for policies."""

import dataclasses

import numpy as np
import pytest

from ace_core.agents.expert import Expert
from ace_core.agents.expert_order import n1_key, rank_key
from ace_core.agents.greedy import Greedy
from ace_core.agents.loading import load_agent
from ace_core.agents.sac import SacAgent
from ace_core.config.expert import ExpertConfig, parse_expert_spec
from ace_core.errors import AgentSpecError
from ace_core.grid.action_space import build_action_space
from ace_core.grid.candidates import disguised_noops, loaded_substations, substation_topologies
from ace_core.grid.contingency import resolve_lines, screen_actions
from ace_core.grid.envs import make_env
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.flex.stay import stay_failure
from ace_core.grid.opponents import attackable_lines
from ace_core.rl.sac import SAC, SACConfig


def test_expert_specs_keep_the_old_syntax_and_read_settings():
    assert parse_expert_spec("") == ExpertConfig()
    assert parse_expert_spec("64").budget == 64
    config = parse_expert_spec("budget=10,lines=1,threshold=0.5,safe=0")
    assert (config.budget, config.lines, config.threshold, config.safe) == (10, 1, 0.5, 0.0)
    for bad, message in [
        ("-3", "positive integer"),
        ("depth=2", "accepted: greedy, greedy:BUDGET or greedy:key=value"),
        ("lines=many", "lines='many' must be a int"),
        ("lines=0", "must be positive"),
    ]:
        with pytest.raises(AgentSpecError, match=message):
            parse_expert_spec(bad)


def test_a_stressed_expert_simulates_every_topology_of_the_loaded_substations(
    sandbox, sandbox_space, fresh_obs
):
    expert = Expert(sandbox_space, sandbox.action_space, ExpertConfig(threshold=0.0, lines=2))
    search = expert.search(fresh_obs)
    assert search.stressed and search.candidates[0] == 0
    mask = sandbox_space.action_mask(fresh_obs)
    wanted = {
        i
        for sub in loaded_substations(fresh_obs, sandbox_space, 2)
        for i in substation_topologies(fresh_obs, sandbox_space, sub, mask)
    }
    assert wanted and wanted <= set(search.candidates)
    assert not disguised_noops(fresh_obs, sandbox_space)[search.candidates].any()
    # the pick: lowest simulated max rho to 1e-3, the default winning ties
    scores = np.round(search.max_rho, 3)
    chosen = search.max_rho[search.candidates.index(search.action)]
    assert round(chosen, 3) == scores.min()
    if search.action != 0:
        assert round(chosen, 3) < scores[0]


def test_outcomes_already_known_are_ranked_not_simulated_again(sandbox, sandbox_space, fresh_obs):
    config = ExpertConfig(threshold=0.0, lines=2)
    alone = Expert(sandbox_space, sandbox.action_space, config).search(fresh_obs)
    # a caller that already simulated two candidates (the default first) passes their max rho
    other = next(i for i in alone.candidates[1:] if i != alone.action)
    known = {0: alone.max_rho[0], other: -1.0}  # -1: better than anything, as only a given figure can be
    search = Expert(sandbox_space, sandbox.action_space, config).search(fresh_obs, known=known)
    assert search.candidates[:2] == [0, other] and search.max_rho[:2] == [known[0], -1.0]
    assert sorted(search.candidates) == sorted(alone.candidates)  # each candidate once
    assert search.action == other  # its known figure was used, not simulated again


def test_a_budget_caps_the_candidates(sandbox, sandbox_space, fresh_obs):
    greedy = load_agent("greedy:budget=5,threshold=0", sandbox, sandbox_space)
    greedy.choose(fresh_obs)
    assert greedy.simulate_calls == 5 and greedy.stats["decisions"] == 1


def test_reconnect_first_then_back_to_the_reference_topology_when_safe(sandbox, sandbox_space):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    calm = Greedy(sandbox, sandbox_space, config=ExpertConfig(threshold=2.0, safe=2.0))
    # a split substation on a calm grid goes back to all on bus 1
    noop = disguised_noops(obs, sandbox_space)
    legal = sandbox_space.action_mask(obs) & ~noop
    for split in np.flatnonzero(legal[sandbox_space.first_topology :]) + sandbox_space.first_topology:
        after, _, done, info = sandbox.step(sandbox_space.to_grid2op(int(split), sandbox.action_space))
        if not done and not info["is_illegal"] and not info["exception"]:
            break
        obs = sandbox.reset(seed=0, options={"time serie id": 0})
    for _ in range(sandbox.parameters.NB_TIMESTEP_COOLDOWN_SUB):
        after, *_ = sandbox.step(sandbox.action_space({}))
    sub = sandbox_space.bits_of(int(split))[0]
    back = calm.choose(after)
    assert back >= sandbox_space.first_topology and sandbox_space.bits_of(back) == (
        sub,
        pytest.approx(np.ones(int(sandbox_space.sub_info[sub]))),
    )
    # a line out and ready: reconnecting it comes first
    out, *_ = sandbox.step(sandbox.action_space({"set_line_status": [(3, -1)]}))
    for _ in range(sandbox.parameters.NB_TIMESTEP_COOLDOWN_LINE):
        out, *_ = sandbox.step(sandbox.action_space({}))
    assert not out.line_status[3]
    assert Greedy(sandbox, sandbox_space, config=ExpertConfig(threshold=2.0, safe=0.0)).choose(out) == 1 + 3


def test_a_policy_topology_equal_to_the_current_one_is_played_as_do_nothing(
    sandbox, sandbox_space, sandbox_features, fresh_obs
):
    sac = SAC(sandbox_features.size, sandbox_space, SACConfig(hidden=16))
    agent = SacAgent(sandbox, sandbox_space, sac, sandbox_features, rho_threshold=0.0)
    noop = int(np.flatnonzero(disguised_noops(fresh_obs, sandbox_space))[0])
    assert agent.real(fresh_obs, noop) == 0
    assert agent.stats["folded_noops"] == 1 and agent.stats["decisions"] == 1
    assert agent.stats["real_actions"] == 0
    played = agent.choose(fresh_obs)
    assert played == 0 or not disguised_noops(fresh_obs, sandbox_space)[played]


def test_the_n1_setting_leaves_existing_mine_keys_alone():
    assert "n1" not in ExpertConfig().key() and parse_expert_spec("budget=10").key() == {
        **ExpertConfig(budget=10).key()
    }
    assert parse_expert_spec("n1=2").n1 == 2 and parse_expert_spec("n1=2").key()["n1"] == 2
    with pytest.raises(AgentSpecError, match="n1 >= 0"):
        parse_expert_spec("n1=-1")


def test_an_n1_expert_picks_the_best_worst_outage_among_its_best_candidates(
    sandbox, sandbox_space, fresh_obs
):
    config = ExpertConfig(threshold=0.0, lines=2, budget=40, learned=0)
    plain = Expert(sandbox_space, sandbox.action_space, config).search(fresh_obs)
    n1 = Expert(sandbox_space, sandbox.action_space, dataclasses.replace(config, n1=2)).search(fresh_obs)
    assert plain.screened == 0 and n1.screened == 2
    assert n1.candidates == plain.candidates and n1.max_rho == plain.max_rho
    # the two best by simulated max rho (the plain pick first), re-ranked by their worst outage
    expert = Expert(sandbox_space, sandbox.action_space, config)
    changes = [expert._changes(fresh_obs, i) for i in plain.candidates]
    order = sorted(range(len(plain.candidates)), key=lambda k: rank_key(plain.max_rho[k], changes[k], k))
    top = [plain.candidates[k] for k in order[:2]]
    assert top[0] == plain.action and n1.action in top
    screens = screen_actions(fresh_obs, [sandbox_space.to_grid2op(i, sandbox.action_space) for i in top])
    keys = dict(zip(top, map(n1_key, screens), strict=True))
    assert keys[n1.action] <= keys[plain.action] and keys[n1.action] == min(keys.values())
    # the agent counts the screenings apart from the simulations
    greedy = load_agent("greedy:budget=40,lines=2,threshold=0,learned=0,n1=2", sandbox, sandbox_space)
    assert greedy.choose(fresh_obs) == n1.action
    assert greedy.stats["contingency_calls"] == 2 and greedy.simulate_calls == len(plain.candidates) + 2


def test_a_guarded_expert_plays_for_a_grid_that_survives_its_worst_outage_better(
    sandbox, sandbox_space, fresh_obs
):
    """Day 0 at max rho 0.80, below the threshold: a line outage would load another past 0.9. The
    guard searches and plays the topology whose worst outage is better than doing nothing's; a
    guard above that outage's rho screens doing nothing only, and the default is played."""

    def search(settings):
        return Expert(sandbox_space, sandbox.action_space, parse_expert_spec(settings)).search(fresh_obs)

    g2op = sandbox.action_space
    base = screen_actions(fresh_obs, [g2op({})])[0]
    assert fresh_obs.rho.max() < 0.9 <= base.worst_rho
    guarded = search("guard=0.9,safe=0.3")
    assert guarded.action != 0 and not guarded.stressed and guarded.screened == 5
    assert guarded.simulations == len(guarded.candidates) + 5
    after = screen_actions(fresh_obs, [sandbox_space.to_grid2op(guarded.action, g2op)])[0]
    assert n1_key(after) < n1_key(base)
    quiet = search(f"guard={base.worst_rho + 0.01},safe=0.3")
    assert (quiet.action, quiet.candidates, quiet.simulations) == (0, [], 1)
    assert "guard" not in ExpertConfig().key() and ExpertConfig(guard=1.0).key()["guard"] == 1.0
    with pytest.raises(AgentSpecError, match="guard >= 0"):
        parse_expert_spec("guard=-1")


def test_with_now_the_best_candidates_are_also_simulated_on_the_current_injections(
    forecast_sandbox, sandbox_space
):
    """The next step's forecast moves 30 MW from generator 2 to generator 4 (a forecast error the
    slack would carry). The topology best on that forecast is worse on the current injections
    than doing nothing: with ``now`` the best candidates are simulated again, each scored by the
    worse of the two, and the expert does nothing."""
    obs = forecast_sandbox.reset(seed=0, options={"time serie id": 0})
    injection = obs._forecasted_inj[1][1]["injection"]
    injection["prod_p"] = (
        injection["prod_p"] + np.eye(len(obs.gen_p))[4] * 30 - np.eye(len(obs.gen_p))[2] * 30
    )

    def expert(settings):
        config = parse_expert_spec(f"threshold=0,budget=40,learned=0{settings}")
        return Expert(sandbox_space, forecast_sandbox.action_space, config)

    plain, now = expert("").search(obs), expert(",now=4").search(obs)
    assert plain.action != 0 and now.action == 0 and 1 <= now.rechecked <= 4
    assert now.candidates == plain.candidates and now.simulations == plain.simulations + now.rechecked
    current = expert("").evaluate(obs, now.candidates, time_step=0)
    for k, (forecast, rescored) in enumerate(zip(plain.max_rho, now.max_rho, strict=True)):
        assert rescored in (forecast, max(forecast, current[k]))
    picked, played = now.candidates.index(plain.action), now.candidates.index(0)
    assert now.max_rho[picked] == current[picked] > now.max_rho[played] >= plain.max_rho[played]
    assert "now" not in ExpertConfig().key() and ExpertConfig(now=4).key()["now"] == 4
    with pytest.raises(AgentSpecError, match="now >= 0"):
        parse_expert_spec("now=-1")


def test_with_attacked_n1_screens_only_the_lines_the_opponent_strikes(sandbox_space):
    """The sandbox under random-line attacks (six lines), day 0: losing any line would load another
    to over 3x its limit, losing one of the six to just over 1x. A guard of 1.5 searches when every
    line is screened and keeps doing nothing when only the six are; without an opponent
    ``attacked`` screens every line."""
    env = make_env("l2rpn_case14_sandbox", opponent="random-line")
    obs = env.reset(seed=0, options={"time serie id": 0})
    struck = resolve_lines(attackable_lines(env), env.name_line)
    every = screen_actions(obs, [env.action_space({})])[0]
    attacked = screen_actions(obs, [env.action_space({})], struck)[0]
    assert len(struck) == attacked.screened == 6 and attacked.worst_rho < 1.5 <= every.worst_rho

    def guard(settings):
        return load_agent(f"greedy:guard=1.5,safe=0.3{settings}", env, sandbox_space).expert

    assert guard("").search(obs).candidates and guard("").outages is None
    quiet = guard(",attacked=1")
    assert quiet.outages == struck and quiet.search(obs).simulations == 1
    assert (
        load_agent("greedy:attacked=1", make_env("l2rpn_case14_sandbox"), sandbox_space).expert.outages
        is None
    )
    assert "attacked" not in ExpertConfig().key() and ExpertConfig(attacked=1).key()["attacked"] == 1
    with pytest.raises(AgentSpecError, match="attacked 0 or 1"):
        parse_expert_spec("attacked=2")


# ----- beyond topology (greedy:flex=K) -----


def test_the_expert_redispatches_when_no_topology_clears_the_overload(tight_sandbox, tight_obs):
    """Line 0 at 1.02 x its limit; a budget of one candidate leaves topology out, so only the
    continuous moves of step 5 can relieve it."""
    space = build_action_space(tight_sandbox)
    plain = Greedy(tight_sandbox, space, config=parse_expert_spec("budget=1"))
    flex = Greedy(tight_sandbox, space, config=parse_expert_spec("budget=1,flex=4"))
    assert plain.expert.search(tight_obs).move is None
    search = flex.expert.search(tight_obs)
    assert search.move is not None and search.move.redispatch
    assert 1 < search.flexed <= 1 + 2 * 4  # the transfer factors' simulation, then each move twice at most
    simulated = tight_obs.simulate(flex.act(tight_obs, 0.0))[0].rho.max()
    assert simulated < tight_obs.simulate(plain.act(tight_obs, 0.0))[0].rho.max() - 0.02
    assert flex.stats["simulate_calls"] == search.simulations  # counted once played


def test_a_move_worth_less_than_the_gain_asked_is_not_played(tight_sandbox, tight_obs):
    """A threshold no move reaches: a gain larger than the move's drop keeps it off the grid
    (moves worth little would pile up), and its simulations still count."""
    space = build_action_space(tight_sandbox)
    settings = "budget=1,threshold=0.5,flex=4"
    any_drop = Greedy(tight_sandbox, space, config=parse_expert_spec(settings)).expert
    demanding = Greedy(tight_sandbox, space, config=parse_expert_spec(f"{settings},gain=0.5")).expert
    played = any_drop.search(tight_obs)
    after = tight_obs.simulate(
        tight_sandbox.action_space({}) + played.move.to_grid2op(tight_sandbox.action_space)
    )[0].rho.max()
    assert 0.5 < after < played.max_rho[0] - 0.01 and played.max_rho[0] - after < 0.5
    refused = demanding.search(tight_obs)
    assert refused.move is None and refused.flexed == played.flexed
    assert "gain" not in ExpertConfig().key() and ExpertConfig(gain=0.02).key()["gain"] == 0.02
    with pytest.raises(AgentSpecError, match="0 <= gain < 1"):
        parse_expert_spec("flex=4,gain=1.5")


def test_with_swap_a_new_move_replaces_a_move_in_force_that_loads_the_line(tight_sandbox, tight_obs):
    """A pair in force that loads the overloaded line: the expert that only adds keeps it under
    its new move; with ``swap=1`` the new move is played in its place, and the grid is lighter."""
    g2op = tight_sandbox.action_space
    space = build_action_space(tight_sandbox)
    harmful = FlexMove(redispatch=((0, -3.0), (5, 3.0)))
    assert tight_obs.simulate(harmful.to_grid2op(g2op))[0].rho.max() > tight_obs.rho.max()
    obs, *_ = tight_sandbox.step(harmful.to_grid2op(g2op))
    adding = Greedy(tight_sandbox, space, config=parse_expert_spec("budget=1,flex=4")).expert.search(obs)
    swapping = Greedy(tight_sandbox, space, config=parse_expert_spec("budget=1,flex=4,swap=1")).expert.search(
        obs
    )
    assert swapping.flexed > adding.flexed  # the swaps are simulated beside the moves

    def after(search):
        return obs.simulate(g2op({}) + search.move.to_grid2op(g2op))[0]

    kept, swapped = after(adding), after(swapping)
    assert kept.target_dispatch[0] == pytest.approx(-3.0)  # the harmful move stays in force
    assert swapped.target_dispatch[0] == pytest.approx(0.0)  # released with the new move
    assert swapped.rho.max() < kept.rho.max() - 0.01
    assert "swap" not in ExpertConfig().key() and ExpertConfig(swap=1).key()["swap"] == 1
    with pytest.raises(AgentSpecError, match="swap, exact, blind and attacked 0 or 1"):
        parse_expert_spec("flex=4,swap=2")


def test_with_exact_the_expert_moves_targets_by_its_moves_mw_and_forgets_them_each_episode(
    tight_sandbox, tight_obs
):
    """Generators making up for another's redispatch: the exact expert asks its pair so that the
    targets move by the pair's MW (none of the make-up frozen), remembers the generators it
    redispatched, and forgets them with the episode."""
    g2op = tight_sandbox.action_space
    obs, *_ = tight_sandbox.step(g2op({"redispatch": [(0, -4.0)]}))
    agent = Greedy(
        tight_sandbox, build_action_space(tight_sandbox), config=parse_expert_spec("budget=1,flex=4,exact=1")
    )
    search = agent.expert.search(obs)
    assert search.move is not None and search.move.redispatch
    targets = obs.simulate(g2op({}) + search.move.to_grid2op(g2op))[0].target_dispatch
    moved = [gen for gen, _ in search.move.redispatch]
    assert agent.expert.redispatched == set(moved)
    changed = targets - obs.target_dispatch
    assert abs(changed[moved].sum()) < 0.1 and abs(changed).max() > 1  # a balanced pair, nothing frozen
    agent.reset(obs)
    assert agent.expert.redispatched == set()


def test_with_release_the_moves_in_force_are_released_between_safe_and_the_threshold(
    tight_sandbox, tight_obs
):
    """A pair in force on a grid at max rho 1.13, between ``safe`` (0.5) and the threshold (1.3):
    the expert that releases only on calm steps keeps it; with ``release=1.3`` the release is
    simulated and played, and a release below the grid's max rho is not tried."""
    g2op = tight_sandbox.action_space
    space = build_action_space(tight_sandbox)
    obs, *_ = tight_sandbox.step(FlexMove(redispatch=((0, -3.0), (5, 3.0))).to_grid2op(g2op))
    assert 0.5 < obs.rho.max() < 1.3

    def search(settings):
        return Greedy(tight_sandbox, space, config=parse_expert_spec(settings)).expert.search(obs)

    calm_only = search("budget=1,flex=4,threshold=1.3,safe=0.5")
    assert calm_only.move is None and calm_only.flexed == 0
    released = search("budget=1,flex=4,threshold=1.3,safe=0.5,release=1.3")
    assert released.action == 0 and released.flexed == 1
    assert dict(released.move.redispatch) == {0: pytest.approx(3.0), 5: pytest.approx(-3.0)}
    assert search("budget=1,flex=4,threshold=1.3,safe=0.5,release=0.9").move is None
    assert "release" not in ExpertConfig().key() and ExpertConfig(release=0.85).key()["release"] == 0.85
    with pytest.raises(AgentSpecError, match="release 0 or between safe and threshold"):
        parse_expert_spec("flex=4,release=0.95")


def test_with_stay_a_move_whose_dispatch_fails_within_the_hour_gives_way_to_the_next(
    forecast_sandbox, targets_in_force
):
    """Targets +20 / -20 MW in force and generator 0's schedule at its Pmax in three steps. The
    expert's best move (a threshold of 0.5 makes the state stressed) is played as before when its
    dispatch can be met over the hour; when it fails at step 3, the next move is checked and
    played, and both checks are counted."""
    env = forecast_sandbox
    space = build_action_space(env)

    def search(settings, schedule_at_pmax_from=None):
        expert = Expert(space, env.action_space, parse_expert_spec(settings))
        return expert.search(targets_in_force(schedule_at_pmax_from))

    plain, held = search("budget=1,threshold=0.5,flex=4"), search("budget=1,threshold=0.5,flex=4,stay=12")
    assert held.move == plain.move is not None and held.flexed == plain.flexed + 12
    best = plain.move
    assert search("budget=1,threshold=0.5,flex=4", schedule_at_pmax_from=3).move == best
    failed = stay_failure(targets_in_force(3), env.action_space({}) + best.to_grid2op(env.action_space), 12)
    assert failed.failed_at == 3
    gave_way = search("budget=1,threshold=0.5,flex=4,stay=12", schedule_at_pmax_from=3)
    assert gave_way.move is not None and gave_way.move != best
    assert gave_way.flexed == plain.flexed + 3 + 12  # the failed check, then the one that held
    assert "stay" not in ExpertConfig().key() and ExpertConfig(stay=12).key()["stay"] == 12
    with pytest.raises(AgentSpecError, match="stay >= 0"):
        parse_expert_spec("flex=4,stay=-1")


def test_with_blind_the_moves_in_force_are_released_when_no_simulation_can_be_used(tight_sandbox, tight_obs):
    """A pair in force and a forecast no power flow can meet (every load five times its own):
    every candidate's simulation fails. The expert plays the default; with ``blind=1`` it plays
    the release of the pair with it, unsimulated."""
    g2op = tight_sandbox.action_space
    space = build_action_space(tight_sandbox)
    obs, *_ = tight_sandbox.step(FlexMove(redispatch=((0, -3.0), (5, 3.0))).to_grid2op(g2op))
    _, forecast = obs._forecasted_inj[1]
    forecast["injection"]["load_p"] = forecast["injection"]["load_p"] * 5

    def search(settings):
        return Greedy(tight_sandbox, space, config=parse_expert_spec(settings)).expert.search(obs)

    seeing = search("budget=20,flex=4")
    assert seeing.stressed and not np.isfinite(seeing.max_rho).any() and seeing.move is None
    blind = search("budget=20,flex=4,blind=1")
    assert blind.action == seeing.action and len(blind.candidates) == len(seeing.candidates)
    assert dict(blind.move.redispatch) == {0: pytest.approx(3.0), 5: pytest.approx(-3.0)}
    assert "blind" not in ExpertConfig().key() and ExpertConfig(blind=1).key()["blind"] == 1


def test_the_expert_costs_what_it_keeps_in_force(tight_sandbox, tight_obs):
    agent = Greedy(
        tight_sandbox, build_action_space(tight_sandbox), config=parse_expert_spec("budget=1,flex=4")
    )
    obs, *_ = tight_sandbox.step(agent.act(tight_obs, 0.0))
    agent.act(obs, 0.0)
    assert agent.stats["flex_mwh"] > 0 and agent.stats["flex_euros"] > 0
