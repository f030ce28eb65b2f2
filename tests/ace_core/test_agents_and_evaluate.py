import dataclasses
import json

import pytest
import torch
from grid2op.Episode import EpisodeData

from ace_core.agents.greedy import Greedy
from ace_core.agents.loading import load_agent
from ace_core.checkpoint import load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import AgentSpecError, CheckpointError, ConfigError
from ace_core.evaluation.runner import evaluate
from ace_core.events import MemorySink
from ace_core.grid.candidates import reference_topologies, substation_topologies
from ace_core.training import run
from tests.sandbox_settings import sandbox_settings


@pytest.fixture(scope="module")
def sandbox_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run(TrainConfig(**sandbox_settings(steps=200, hidden=32, checkpoint_every=200)), out, MemorySink())
    return out


@pytest.mark.parametrize("spec", ["do-nothing", "reconnect", "greedy:16", "sac", "sac-critic", "sac-checked"])
def test_each_agent_runs_a_test_episode_through_the_runner(tmp_path, sandbox_run, spec):
    if spec.startswith("sac"):
        spec = f"{spec}:{sandbox_run}"
    out = tmp_path / "eval"
    report = evaluate("l2rpn_case14_sandbox", spec, "test", nb_episode=1, out_dir=out)
    (episode,) = report["episodes"]
    assert 0 < episode["steps_survived"] <= episode["max_steps"] == 288
    assert 0.0 <= report["survival_mean"] <= 1.0
    assert report["decision_ms_p95"] >= report["decision_ms_p50"] > 0
    assert json.loads((out / "report.json").read_text())["agent"] == spec
    # the Runner's EpisodeData opens with grid2op's own reader
    folder = next((out / "episodes" / "seed0").iterdir())
    data = EpisodeData.from_disk(str(folder), next(p.name for p in folder.iterdir() if p.is_dir()))
    assert len(data.actions) == episode["steps_survived"]


def test_greedy_simulates_only_when_the_grid_needs_it(sandbox, sandbox_space):
    greedy = Greedy(sandbox, sandbox_space, budget=8, rho_threshold=0.0)
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    index = greedy.choose(obs)
    assert greedy.simulate_calls == 8  # do nothing + 7 candidates
    assert 0 <= index < sandbox_space.n
    calm = Greedy(sandbox, sandbox_space, budget=8, rho_threshold=2.0)
    assert calm.choose(obs) == 0 and calm.simulate_calls == 0


def test_bad_agent_specs_and_checkpoints(tmp_path, sandbox, sandbox_run):
    with pytest.raises(AgentSpecError, match="accepted: do-nothing, reconnect, greedy"):
        load_agent("clever", sandbox)
    with pytest.raises(AgentSpecError, match="positive integer"):
        load_agent("greedy:-3", sandbox)
    with pytest.raises(AgentSpecError, match="sac-critic K '0' must be a positive integer"):
        load_agent(f"sac-critic:{sandbox_run}:0", sandbox)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_agent(f"sac:{tmp_path}", sandbox)
    corrupt = tmp_path / "checkpoint.pt"
    corrupt.write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_agent(f"sac:{tmp_path}", sandbox)


def test_agents_that_read_the_critics_refuse_a_policy_whose_critics_were_never_trained(
    tmp_path, sandbox, sandbox_run
):
    state = load_checkpoint(sandbox_run)
    assert state["sac"]["updates"] > 0 and load_agent(f"sac-critic:{sandbox_run}", sandbox)
    state["sac"]["updates"] = 0  # as a clone, or a best.pt kept before RL's first update
    torch.save(state, tmp_path / "checkpoint.pt")
    for spec in (f"sac-critic:{tmp_path}", f"sac-checked:{tmp_path}:5:stop=0.9:critic"):
        with pytest.raises(AgentSpecError, match="has none trained .0 RL updates"):
            load_agent(spec, sandbox)
    assert load_agent(f"sac-checked:{tmp_path}:5:stop=0.9", sandbox).k == 5  # no critics read


def test_a_checkpoint_from_another_env_is_refused(sandbox_run):
    with pytest.raises(CheckpointError, match="trained on action space"):
        evaluate("rte_case14_realistic", f"sac:{sandbox_run}", "test", nb_episode=1)


def test_evaluation_leaves_no_partial_output(tmp_path):
    with pytest.raises(ConfigError):
        evaluate("l2rpn_case14_sandbox", "do-nothing", "test", nb_episode=0, out_dir=tmp_path / "x")
    with pytest.raises(AgentSpecError):
        evaluate("l2rpn_case14_sandbox", "nobody", "test", out_dir=tmp_path / "y")
    assert list(tmp_path.iterdir()) == []


def test_survival_is_relative_to_the_scenario_length_not_the_chronic_step():
    report = evaluate("l2rpn_case14_sandbox", "do-nothing", "train", nb_episode=2)  # 0000@0, 0000@288
    offsets = [e for e in report["episodes"] if not e["scenario"].endswith("@0+288")]
    assert offsets, "the first train scenarios include one that starts inside its chronic"
    for episode in report["episodes"]:
        assert episode["max_steps"] == int(episode["scenario"].split("+")[1])
        assert episode["steps_survived"] <= episode["max_steps"]
    assert report["survival_mean"] == 1.0  # doing nothing survives the sandbox grid


def test_a_checkpoint_written_before_composed_configs_still_evaluates(tmp_path, sandbox_run):
    state = load_checkpoint(sandbox_run)
    # the policy's part of a checkpoint as written then: flat settings, some added since missing
    config = {k: v for k, v in TrainConfig.from_dict(state["config"]).to_dict().items() if k != "imitation"}
    legacy = {key: state[key] for key in ("format", "fingerprint", "subset", "sac", "features")}
    torch.save({**legacy, "config": config}, tmp_path / "checkpoint.pt")
    reports = [
        evaluate("l2rpn_case14_sandbox", f"sac:{run}", "test", nb_episode=1, out_dir=tmp_path / name)
        for name, run in (("old", tmp_path), ("new", sandbox_run))
    ]
    old, new = (r["episodes"][0] for r in reports)
    assert old["steps_survived"] == new["steps_survived"] > 0 and old["reward"] == new["reward"]


def test_episodes_of_three_days():
    report = evaluate("rte_case14_realistic", "do-nothing", "test", nb_episode=1, episode_length=864)
    (episode,) = report["episodes"]
    assert episode["max_steps"] == 864 and episode["scenario"].endswith("+864")
    assert 0 < episode["steps_survived"] <= 864
    assert report["episode_length"] == 864 and report["opponent"] == "env" and report["attacks"] == 0


def deciding(spec: str, env):
    """The agent ``spec`` names, asked to decide at every step."""
    agent = load_agent(spec, env)
    agent.rho_threshold = 0.0
    return agent


def test_critic_policy_plays_what_its_critics_value_highest_without_simulating(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    agent = deciding(f"sac-critic:{sandbox_run}:4", sandbox)
    features = agent.features(obs)
    ranked = [index for index, _ in agent.sac.policy(features, agent.space.top_mask(obs)).top_k(4)]
    candidates = [0] + [index for index in ranked if index != 0]  # nothing to reconnect here
    batch = torch.from_numpy(features)[None].expand(len(candidates), -1)
    with torch.no_grad():
        q1, q2 = (head.at(head(batch), torch.tensor(candidates)) for head in (agent.sac.qf1, agent.sac.qf2))
    values = torch.minimum(q1, q2).numpy()

    played = agent.choose(obs)

    assert played == candidates[int(values.argmax())]
    assert agent.simulate_calls == 0 and agent.stats["decisions"] == 1
    # K = 1: the policy's own choice, or leaving the grid as it is
    assert deciding(f"sac-critic:{sandbox_run}", sandbox).choose(obs) in (0, ranked[0])


def test_checked_policy_stops_at_the_first_safe_candidate(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    batch = deciding(f"sac-checked:{sandbox_run}:4", sandbox)
    lenient = deciding(f"sac-checked:{sandbox_run}:4:stop=100", sandbox)
    strict = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001", sandbox)
    chosen = batch.choose(obs)
    candidates = batch.simulate_calls
    assert candidates >= 2
    # reconnect-or-nothing is simulated first; below the stop nothing else is simulated
    assert lenient.choose(obs) == 0 and lenient.simulate_calls == 1
    # a stop no candidate reaches simulates them all and plays the batch's choice
    assert strict.choose(obs) == chosen and strict.simulate_calls == candidates


def spy(first_safe, asked: list):
    """``first_safe`` that also records the candidates it was asked to simulate, in order."""

    def recording(obs, candidates, wary_of=None):
        asked.extend(candidates)
        return first_safe(obs, candidates, wary_of)

    return recording


def test_checked_policy_can_try_its_candidates_in_its_critics_order(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    tried = {}
    for order in ("policy", "critic"):
        spec = f"sac-checked:{sandbox_run}:20:stop=0.0001" + (":critic" if order == "critic" else "")
        agent = deciding(spec, sandbox)
        agent.first_safe = spy(agent.first_safe, tried.setdefault(order, []))
        agent.choose(obs)  # no candidate is below the stop: every one is simulated, in order
    assert tried["critic"][0] == tried["policy"][0] == 0  # reconnect-or-nothing first either way
    assert sorted(tried["critic"]) == sorted(tried["policy"]) and len(tried["critic"]) > 2
    assert tried["critic"] != tried["policy"], "the two orders agree here: the test would prove nothing"
    values = agent.sac.critic_values(agent.features(obs), tried["critic"][1:])
    assert list(values) == sorted(values, reverse=True)


def test_checked_policy_hands_the_hardest_steps_to_the_expert(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    lenient = deciding(f"sac-checked:{sandbox_run}:4:stop=100:expert", sandbox)
    strict = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001:expert", sandbox)
    alone = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001", sandbox)
    # a safe candidate: the expert is not asked
    assert lenient.choose(obs) == 0 and lenient.simulate_calls == 1
    assert lenient.stats["expert_steps"] == 0
    # none safe: the expert searches on, without simulating the policy's candidates again
    policy_choice = alone.choose(obs)
    action = strict.choose(obs)
    expert = strict.expert
    searched = expert.candidates(obs, 0)
    assert strict.stats["expert_steps"] == 1
    assert alone.simulate_calls < strict.simulate_calls <= alone.simulate_calls + len(searched)
    # what it plays is at least as good as the policy's best and the expert's best
    rho = dict(zip(searched, expert.evaluate(obs, searched), strict=True))
    played, best_of_policy = expert.evaluate(obs, [action, policy_choice])
    assert played <= min(min(rho.values()), best_of_policy) + 1e-3
    # the search learns the topologies it plays, within one episode
    assert action < strict.space.first_topology or expert.played[action] == 1
    strict.reset(obs)
    assert not expert.played


def test_the_safety_net_keeps_to_its_budget(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    wide = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001:expert", sandbox)
    budgeted = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001:expert=3", sandbox)
    alone = deciding(f"sac-checked:{sandbox_run}:4:stop=0.0001", sandbox)
    for agent in (wide, budgeted, alone):
        agent.choose(obs)  # no candidate is below the stop
    assert budgeted.expert.config.budget == 3 and budgeted.stats["expert_steps"] == 1
    assert alone.simulate_calls < budgeted.simulate_calls <= alone.simulate_calls + 3 < wide.simulate_calls


def test_checked_spec_parts_are_checked(sandbox, sandbox_run):
    agent = load_agent(f"sac-checked:{sandbox_run}:3:stop=0.95", sandbox)
    assert (agent.k, agent.stop, agent.expert) == (3, 0.95, None)
    both = load_agent(f"sac-checked:{sandbox_run}:3:stop=0.95:expert:revert", sandbox)
    assert both.expert is not None and both.reverter is not None and both.stop == 0.95
    assert load_agent(f"sac-checked:{sandbox_run}:revert", sandbox).reverter is not None
    ordered = load_agent(f"sac-checked:{sandbox_run}:3:stop=0.9:critic:expert", sandbox)
    assert ordered.critic_order and ordered.expert is not None and (ordered.k, ordered.stop) == (3, 0.9)
    assert not both.critic_order
    with pytest.raises(AgentSpecError, match="needs a stop"):
        load_agent(f"sac-checked:{sandbox_run}:3:expert", sandbox)
    assert load_agent(f"sac-checked:{sandbox_run}:stop=1", sandbox).k == 10
    with pytest.raises(AgentSpecError, match="positive max rho"):
        load_agent(f"sac-checked:{sandbox_run}:3:stop=high", sandbox)
    with pytest.raises(AgentSpecError, match="positive integer"):
        load_agent(f"sac-checked:{sandbox_run}:0:stop=1.0", sandbox)


def test_checked_policy_can_go_back_to_the_reference_topology_when_calm(sandbox, sandbox_run):
    agent = load_agent(f"sac-checked:{sandbox_run}:4:stop=0.95:revert", sandbox)
    agent.rho_threshold = 2.0  # every step is calm
    agent.reverter.config = dataclasses.replace(agent.reverter.config, threshold=2.0)
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    assert agent.choose(obs) == 0 and agent.simulate_calls == 0  # nothing is split: nothing to try
    splits = [
        index
        for sub in range(agent.space.n_sub)
        for index in substation_topologies(obs, agent.space, sub, agent.space.action_mask(obs))
    ]
    rho = agent.reverter.evaluate(obs, splits)
    split = next(index for index, after in zip(splits, rho, strict=True) if after < 0.7)
    obs, *_ = sandbox.step(agent.space.to_grid2op(split, sandbox.action_space))
    obs, *_ = sandbox.step(sandbox.action_space({}))  # the substation's cooldown
    assert obs.rho.max() < agent.reverter.config.safe
    back = agent.choose(obs)
    (reference,) = reference_topologies(obs, agent.space)
    assert agent.simulate_calls == 1
    # played only if it keeps the grid below the expert's safe level
    (after,) = agent.reverter.evaluate(obs, [reference])
    assert back == (reference if after < agent.reverter.config.safe else 0)


def test_a_policy_can_be_told_to_act_from_another_max_rho(sandbox, sandbox_run):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    run_threshold = load_checkpoint(sandbox_run)["config"]
    assert (
        load_agent(f"sac:{sandbox_run}", sandbox).rho_threshold
        == TrainConfig.from_dict(run_threshold).rho_threshold
    )
    eager = load_agent(f"sac:{sandbox_run}:act=0.0001", sandbox)
    calm = load_agent(f"sac:{sandbox_run}:act=100", sandbox)
    eager.choose(obs)
    assert calm.choose(obs) == 0  # below its act level: reconnect or nothing, not a decision
    assert (eager.stats["decisions"], calm.stats["decisions"]) == (1, 0)
    # the checked policy takes act= among its other parts, in any order, and simulates nothing below it
    checked = load_agent(f"sac-checked:{sandbox_run}:3:act=100:stop=0.95:critic", sandbox)
    assert (checked.k, checked.stop, checked.critic_order, checked.rho_threshold) == (3, 0.95, True, 100.0)
    assert checked.choose(obs) == 0 and checked.simulate_calls == 0
    assert load_agent(f"sac-critic:{sandbox_run}:2:act=0.9", sandbox).rho_threshold == 0.9
    for bad in ("act=high", "act=0", "act=0.9:act=1.0"):
        with pytest.raises(AgentSpecError, match="one act=R with R a positive max rho"):
            load_agent(f"sac:{sandbox_run}:{bad}", sandbox)


def test_a_steady_check_does_not_change_again_the_substation_it_just_changed(tmp_path):
    """``:steady``: while a line stays overloaded, the substation changed at the previous step is
    left as it is, whatever its candidates and the expert's search find there."""
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env
    from ace_core.live import untrained_policy

    env = make_env("rte_case14_realistic")
    space = build_action_space(env)
    policy = untrained_policy("rte_case14_realistic", tmp_path / "checkpoint.pt", hidden=32)
    plain = load_agent(f"sac-checked:{policy}:10:stop=0.95:expert", env, space)
    steady = load_agent(f"sac-checked:{policy}:10:stop=0.95:expert:steady", env, space)
    obs = env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(785)  # doing nothing ends this day at step 798: overloads
    obs, noop, checked = env.get_obs(), env.action_space({}), 0
    while checked < 3 and not obs.simulate(noop)[2]:
        if obs.rho.max() >= 1.0:
            chosen = plain.choose(obs)
            if chosen > space.n_line:
                held = int(space.bits_of(chosen)[0])
                steady.last_substation = held
                other = steady.choose(obs)
                assert other <= space.n_line or int(space.bits_of(other)[0]) != held
                checked += 1
        obs, _, done, _ = env.step(noop)
        if done:
            break
    assert checked, "no overloaded step where the check changed a substation"


def test_a_wary_check_does_not_stop_at_doing_nothing_while_a_line_is_overloaded(tmp_path):
    """``:wary``: on a step with a line overloaded now whose one-step forecast eases it below the
    stop, the plain check plays doing nothing after one simulation; the wary one counts doing
    nothing as no better than now and simulates the policy's candidates too."""
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env
    from ace_core.live import untrained_policy

    env = make_env("rte_case14_realistic")
    space = build_action_space(env)
    policy = untrained_policy("rte_case14_realistic", tmp_path / "checkpoint.pt", hidden=32)
    env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(864)
    obs = env.get_obs()
    now, forecast = obs.rho.max(), obs.simulate(env.action_space({}))[0].rho.max()
    assert 1.0 <= now and 0 < forecast < now  # overloaded now, eased by the forecast
    stop = (forecast + now) / 2
    plain = load_agent(f"sac-checked:{policy}:10:stop={stop}", env, space)
    wary = load_agent(f"sac-checked:{policy}:10:stop={stop}:wary", env, space)
    assert plain.choose(obs) == 0 and plain.simulate_calls == 1
    wary.choose(obs)
    assert wary.simulate_calls > 1
    assert wary.first_safe(obs, [0], wary_of=0) == {0: now}  # doing nothing counts as the state now


def test_the_safety_net_goes_beyond_topology_and_releases_its_moves_when_calm(
    tight_sandbox, tight_obs, sandbox_run
):
    """Line 0 at 1.02 x its limit, a net of one candidate: only a continuous move relieves it
    (tests/ace_core/conftest.py). With ``flex`` the checked policy plays the net's move with its
    pick; once the grid is calm, the move is released."""
    spec = f"sac-checked:{sandbox_run}:1:stop=0.0001:expert=1:revert"
    topology, flex = deciding(spec, tight_sandbox), deciding(f"{spec}:flex=4", tight_sandbox)
    played = {name: agent.act(tight_obs, 0.0) for name, agent in (("topology", topology), ("flex", flex))}
    rho = {name: tight_obs.simulate(action)[0].rho.max() for name, action in played.items()}
    assert flex.stats["expert_steps"] == topology.stats["expert_steps"] == 1
    assert rho["flex"] < rho["topology"] - 0.02
    assert flex.simulate_calls > topology.simulate_calls  # the transfer factors and each move, counted
    assert not flex.expert.config.swap and load_agent(f"{spec}:flex=4:swap", tight_sandbox).expert.config.swap
    assert (
        not flex.expert.config.exact and load_agent(f"{spec}:flex=4:exact", tight_sandbox).expert.config.exact
    )
    released = load_agent(f"{spec}:act=0.9:flex=4:release=0.85", tight_sandbox)
    assert not flex.expert.config.release and released.expert.config.release == 0.85
    with pytest.raises(AgentSpecError, match=r"release=0.95 must lie between the expert's safe \(0.8\) and"):
        load_agent(f"{spec}:act=0.9:flex=4:release=0.95", tight_sandbox)  # above the net's threshold
    obs, *_ = tight_sandbox.step(played["flex"])
    assert abs(obs.target_dispatch).sum() > 0  # the move stays in force
    limits = tight_sandbox.get_thermal_limit()
    tight_sandbox.set_thermal_limit(limits * 3)  # a calm grid
    try:
        obs, *_ = tight_sandbox.step(tight_sandbox.action_space({}))
        flex.rho_threshold = 2.0
        released = flex.act(obs, 0.0)
        after, *_ = obs.simulate(released)
        assert abs(after.target_dispatch).sum() < abs(obs.target_dispatch).sum()
    finally:
        tight_sandbox.set_thermal_limit(limits)
