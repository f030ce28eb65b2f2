"""The live grid behind the operator's console: one scenario stepped on demand, with the
recommendation pipeline's cards (the deployed policy's and the expert's actions, checked by
simulation, N-1 and look-ahead), and operators' actions checked and simulated.

Pure Python (no Django): the web app's feed worker owns one :class:`LiveGrid` per session and
persists what it returns; the web process keeps a mirror of the same grid (same scenario, seed and
applied actions, so the same states) to answer what-if questions without asking the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_core.agents.sac import load_sac
from ace_core.grid.action_space import ActionSpace, build_action_space
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.outcome import exception_text
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, reset_to
from ace_core.grid.text import state_text
from ace_core.live.actions import DO_NOTHING, LiveAction, LiveActionError, parse_action, to_grid2op
from ace_core.live.envs import acquire_env, live_scenarios, release_env, session_scenario
from ace_core.live.legality import LegalityRules
from ace_core.live.recommendations import assessment_dict, live_pipeline
from ace_core.live.states import grid_state
from ace_core.live.what_if_step import WhatIf, what_if
from ace_core.recommend.outcomes import Candidate
from ace_core.recommend.ranking import shortlist
from ace_core.rl.sac import SAC


@dataclass
class StepResult:
    step: int
    state: dict[str, Any]
    reward: float
    done: bool
    finished: bool
    """the scenario reached its last step (done without game over)"""
    reason: str
    """why the grid failed, when done and not finished"""
    text: str
    cards: list[Candidate] = field(default_factory=list)
    """the cards shown: the pipeline's ``k`` safest recommendations, none worse than doing
    nothing, with the policy's best safe proposal among them when it has one
    (:func:`ace_core.recommend.ranking.shortlist`)"""
    assessment: dict[str, Any] = field(default_factory=dict)
    """doing nothing's outcome, the rejected candidates, the grid's N-1 status and look-ahead,
    the forecast used (:func:`ace_core.live.recommendations.assessment_dict`)"""
    timings: dict[str, float] = field(default_factory=dict)


class LiveGrid:
    """One live scenario: reset, step with operators' actions, recommend, what-if."""

    def __init__(
        self,
        env_name: str,
        scenario_index: int,
        seed: int,
        policy_path: str | Path | None,
        *,
        k: int = 3,
        start_step: int = 0,
        max_steps: int = 0,
        episode_length: int = DEFAULT_EPISODE_LENGTH,
        env=None,
        space: ActionSpace | None = None,
    ) -> None:
        self.env_name = env_name
        self._pooled = env is None
        self.env = env if env is not None else acquire_env(env_name)
        self.space = space or build_action_space(self.env)
        try:
            self.scenario = session_scenario(
                live_scenarios(self.env, episode_length),
                scenario_index,
                start_step=start_step,
                max_steps=max_steps,
            )
        except LiveActionError as error:
            self.close()
            raise LiveActionError(f"{env_name}: {error}") from error
        self.seed = seed
        self.k = k
        self.sac: SAC | None = None
        self.features: FeatureBuilder | None = None
        if policy_path:
            self.sac, self.space, self.features, _ = load_sac(Path(policy_path), self.env, self.space)
        self.obs = None
        self.shown: dict[int, tuple[str, ...]] = {}
        """the cards of the last step (action index -> sources), carried into the next"""
        self.step_index = 0
        self.done = False
        self.state: dict[str, Any] | None = None
        self.rules = LegalityRules(self.env, self.space)
        self.pipeline = live_pipeline(self.env, self.space, k=k, sac=self.sac, features=self.features)

    def close(self) -> None:
        """Hand the env back to the pool (the grid is unusable afterwards)."""
        if self._pooled and self.env is not None:
            release_env(self.env_name, self.env)
        self.env = None

    # ----- stepping -----
    def reset(self) -> StepResult:
        self.obs = reset_to(self.env, self.scenario, self.seed)
        self.shown = {}
        self.step_index = 0
        self.done = False
        self.state = grid_state(self.obs, 0)
        return self._result(reward=0.0, done=False, reason="")

    def replay(self, actions: list[dict[str, Any]]) -> None:
        """Bring a fresh grid to the state after ``actions`` (one JSON action per step played):
        how a restarted worker resumes and how the web process mirrors the worker's grid."""
        self.reset()
        for spec in actions:
            self._advance(parse_action(spec, self.space) if spec else DO_NOTHING)

    def advance(self, action: LiveAction = DO_NOTHING) -> None:
        """Play ``action`` without computing recommendations (replays, mirrors)."""
        self._advance(action)

    def step(self, action: LiveAction = DO_NOTHING, *, with_recommendations: bool = True) -> StepResult:
        """Play ``action`` (or nothing) and return the new state, with recommendations."""
        reward, done, reason = self._advance(action)
        return self._result(
            reward=reward, done=done, reason=reason, with_recommendations=with_recommendations
        )

    def _advance(self, action: LiveAction) -> tuple[float, bool, str]:
        if self.done:
            raise LiveActionError(
                f"the scenario is over (step {self.step_index}); nothing more can be played"
            )
        obs, reward, done, info = self.env.step(to_grid2op(action, self.space, self.env.action_space))
        self.obs = obs
        self.step_index += 1
        self.done = bool(done)
        self.state = grid_state(obs, self.step_index, attacked=info.get("opponent_attack_line"))
        return float(reward), bool(done), exception_text(info)

    def _result(
        self, *, reward: float, done: bool, reason: str, with_recommendations: bool = True
    ) -> StepResult:
        finished = done and self.step_index >= self.scenario.length - 1 and not reason
        result = StepResult(
            step=self.step_index,
            state=self.state,
            reward=reward,
            done=done,
            finished=finished,
            reason=reason,
            text="" if done else state_text(self.obs, self.space),
        )
        if with_recommendations and not done and self.sac is not None:
            # the cards shown last step are proposed again and keep their places while still safe
            found = self.pipeline.run(self.obs, state_backend=self.env.backend, carried=self.shown)
            result.cards = shortlist(found.recommendations, self.k, carried=self.shown)
            self.shown = {c.action_index: c.sources for c in result.cards if not c.parts}
            result.assessment = assessment_dict(found, result.cards)
            result.timings = found.timings_ms
        return result

    # ----- checking and simulating operators' actions -----
    def refusal(self, action: LiveAction) -> str:
        """Why ``action`` cannot be played on the current state (empty when it can)."""
        if self.done:
            return "the scenario is over; no action can be played"
        return self.rules.refusal(self.obs, action)

    def what_if(self, action: LiveAction) -> WhatIf:
        """Simulate ``action`` one step ahead, with the pipeline's figures: N-1, look-ahead, and
        why it is worse than doing nothing, if it is; refused (with the reason) when it cannot be
        played."""
        return what_if(self.pipeline, self.obs, action, self.refusal(action))
