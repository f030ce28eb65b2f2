"""A live session's day as grid2op EpisodeData, through grid2op's Runner: the session's actions
played again (:func:`export_episode`), or an agent playing the same day for as many steps
(:func:`play_day`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grid2op.Agent import BaseAgent

from ace_core.agents.loading import load_agent
from ace_core.agents.spec import AgentSpec
from ace_core.errors import AceError
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario
from ace_core.live.actions import DO_NOTHING, parse_action, to_grid2op
from ace_core.live.envs import live_scenarios, session_scenario


class ReplayAgent(BaseAgent):
    """Plays a recorded list of live actions, one per step (then nothing)."""

    def __init__(self, env, space: ActionSpace, actions: list[dict[str, Any]]) -> None:
        super().__init__(env.action_space)
        self.space = space
        self.actions = [parse_action(a, space) if a else DO_NOTHING for a in actions]
        self.position = 0

    def reset(self, obs) -> None:
        self.position = 0

    def act(self, observation, reward, done=False):
        action = self.actions[self.position] if self.position < len(self.actions) else DO_NOTHING
        self.position += 1
        return to_grid2op(action, self.space, self.action_space)


def export_episode(
    *,
    env_name: str,
    scenario_index: int,
    seed: int,
    actions: list[dict[str, Any]],
    out_dir: Path,
    start_step: int = 0,
    max_steps: int = 0,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
) -> Path:
    """Write the session as grid2op EpisodeData (what ``EpisodeData.from_disk`` reads) by playing
    its actions again through grid2op's Runner, and return the episode's folder."""
    env = make_env(env_name, cache_chronics=False)  # the Runner resets chronics itself
    space = build_action_space(env)
    return _run_day(
        env,
        ReplayAgent(env, space, actions),
        scenario=session_scenario(
            live_scenarios(env, episode_length), scenario_index, start_step=start_step, max_steps=max_steps
        ),
        seed=seed,
        steps=len(actions),
        out_dir=Path(out_dir),
    )


def play_day(
    *,
    env_name: str,
    scenario_index: int,
    seed: int,
    agent: str | AgentSpec,
    steps: int,
    out_dir: Path,
    start_step: int = 0,
    max_steps: int = 0,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
) -> Path:
    """Write ``agent`` (an :class:`~ace_core.agents.spec.AgentSpec` or its text) playing a session's
    day as grid2op EpisodeData: the same env, scenario and seed as :func:`export_episode`, for
    ``steps`` steps (the session's), and return the episode's folder. Its decision times are the
    Runner's own."""
    env = make_env(env_name, cache_chronics=False)
    space = build_action_space(env)
    return _run_day(
        env,
        load_agent(agent, env, space),
        scenario=session_scenario(
            live_scenarios(env, episode_length), scenario_index, start_step=start_step, max_steps=max_steps
        ),
        seed=seed,
        steps=steps,
        out_dir=Path(out_dir),
    )


def _run_day(env, agent: BaseAgent, *, scenario: Scenario, seed: int, steps: int, out_dir: Path) -> Path:
    from grid2op.Runner import Runner

    # the Runner stops where the session stopped (the scenario's end, a game over or a stop)
    options = {**scenario.reset_options(), "max step": min(scenario.length, max(1, steps))}
    out_dir.mkdir(parents=True, exist_ok=True)
    runner = Runner(**env.get_params_for_runner(), agentClass=None, agentInstance=agent)
    runner.run(
        nb_episode=1, reset_options=[options], env_seeds=[seed], agent_seeds=[seed], path_save=str(out_dir)
    )
    folders = [p for p in out_dir.iterdir() if p.is_dir()]
    if len(folders) != 1:
        raise AceError(f"the Runner wrote {len(folders)} episode folders in {out_dir}; expected 1")
    return folders[0]
