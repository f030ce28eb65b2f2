"""Recommendations for operators, checked by simulation; no LLM involved.

:class:`RecommendationPipeline` is the one recommendation pipeline (console, HTTP API,
evaluation, benchmark). Its candidates are doing nothing (the reference), the default move
(reconnect a line whose cooldown is over, else nothing), the policy's most likely actions and
the greedy expert's best few. Each is

- simulated one step ahead (:func:`ace_core.grid.simulate.simulate_many`, batched);
- screened for N-1 on the grid it leads to (:mod:`ace_core.grid.contingency`, LightSim2Grid's
  contingency analysis), over every line or a configured list;
- for doing nothing and the best few, looked ahead over the forecasts' horizon
  (:mod:`ace_core.grid.lookahead`, default 12 steps = one hour), saying which kind of forecast
  it used (:mod:`ace_core.grid.forecasts`);

then ranked by the safety order of :mod:`ace_core.recommend.ranking`, which also rejects, with the
reason, every candidate worse than doing nothing. Doing nothing's own outcome is always
returned, as the reference and as the live state's security (its N-1 status and look-ahead).
The result types and their JSON are in :mod:`ace_core.recommend.outcomes`.

:func:`recommend` (in :mod:`ace_core.recommend.topk`, re-exported here) is the earlier fast path,
kept for the callers that still use it.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass

import numpy as np
from grid2op.Exceptions import Grid2OpException

from ace_core.errors import ConfigError
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import greedy_candidates, reconnect_or_nothing
from ace_core.grid.contingency import N1Screen, resolve_lines, screen_n1
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.forecasts import (
    DEFAULT_HORIZON,
    ForecastError,
    ForecastInfo,
    available_horizon,
    check_horizon,
    forecast_kind,
)
from ace_core.grid.lookahead import ForecastSeries, look_ahead, skipped_look_ahead
from ace_core.grid.simulate import Simulated, simulate_many, simulate_rho
from ace_core.grid.solved import SolvedGrid
from ace_core.recommend.outcomes import Candidate, RecommendationSet, StateSecurity, outcome_words
from ace_core.recommend.ranking import rank, rejection
from ace_core.recommend.topk import (  # noqa: F401 - the earlier path, re-exported for its callers
    Recommendation,
    SimulatedOutcome,
    outcome_of,
    recommend,
    simulate,
)
from ace_core.rl.sac import SAC

# ----------------------------------------------------------------------------- the pipeline


@dataclass(frozen=True)
class PipelineConfig:
    """How many candidates of each source, and how far the screening looks."""

    policy_k: int = 5
    """the policy's most likely actions considered"""
    expert_k: int = 4
    """the greedy expert's best simulated actions considered"""
    expert_budget: int = 16
    """candidates the expert simulates one step ahead to find its best ``expert_k``"""
    expert_n1: int = 0
    """when above ``expert_k``: the expert pool's best this many by max rho are screened for N-1
    and the ``expert_k`` kept are the first not worse than doing nothing by the safety order (N-1
    before max rho); otherwise the pool's best ``expert_k`` by max rho are kept and only those
    are screened"""
    horizon: int = DEFAULT_HORIZON
    """look-ahead steps (5 minutes each)"""
    look_ahead_top: int = 3
    """look-ahead for the best this many candidates (and always for doing nothing)"""
    contingencies: tuple[int | str, ...] | None = None
    """lines (ids or names) whose loss N-1 screens; None: every line"""

    def __post_init__(self) -> None:
        for name in ("policy_k", "expert_k", "expert_budget", "expert_n1", "look_ahead_top"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a whole number >= 0")
        if not isinstance(self.horizon, int) or isinstance(self.horizon, bool) or self.horizon <= 0:
            raise ForecastError(
                f"look-ahead horizon {self.horizon!r} must be a positive number of steps, e.g. 12"
            )


class RecommendationPipeline:
    """The one recommendation pipeline: candidates, one-step simulation, N-1, look-ahead, ranking.

    ``run(obs)`` returns a :class:`~ace_core.recommend.outcomes.RecommendationSet`. The env gives the
    grid's line names and its kind of forecasts; ``sac`` and ``features`` are optional (without a
    policy, the candidates are the default move and the expert's).
    """

    def __init__(
        self,
        env,
        space: ActionSpace,
        config: PipelineConfig | None = None,
        sac: SAC | None = None,
        features: FeatureBuilder | None = None,
    ) -> None:
        self.config = config or PipelineConfig()
        self.space = space
        self.g2op_space = env.action_space
        self.sac, self.features = sac, features
        self.line_names = [str(n) for n in env.name_line]
        self.lines = resolve_lines(self.config.contingencies, self.line_names)
        self.kind = forecast_kind(env)
        current = getattr(env, "current_obs", None)
        if current is not None and available_horizon(current):
            check_horizon(self.config.horizon, available_horizon(current))

    # ----- candidates -----
    def _candidates(self, obs) -> tuple[list[Candidate], int, float]:
        """Doing nothing (the reference, first), the default move, the policy's most likely
        actions, then the expert's pool (``expert_budget`` of them, from which the run keeps the
        best ``expert_k``); also the number of non-pool candidates and the policy's time."""
        before_max = float(np.max(obs.rho))
        found: dict[int, Candidate] = {}

        def add(index: int, source: str, confidence: float = 0.0) -> None:
            if index in found:
                found[index].sources += (source,)
                found[index].confidence = max(found[index].confidence, confidence)
            else:
                found[index] = Candidate(
                    index,
                    self.space.describe(index),
                    (source,),
                    confidence,
                    self._substations(index),
                    before_max,
                )

        add(0, "reference")
        add(reconnect_or_nothing(obs), "default")
        started = time.perf_counter()
        if self.sac is not None and self.config.policy_k:
            policy = self.sac.policy(self.features(obs), self.space.top_mask(obs))
            for index, prob in policy.top_k(self.config.policy_k):
                add(index, "policy", prob)
        policy_ms = (time.perf_counter() - started) * 1000
        n_proposed = len(found)
        if self.config.expert_k:
            for index in greedy_candidates(obs, self.space, self.config.expert_budget):
                add(index, "expert")
        return list(found.values()), n_proposed, policy_ms

    def _substations(self, index: int) -> tuple[int, ...]:
        if index == 0:
            return ()
        if index <= self.space.n_line:
            line = index - 1
            return (int(self.space.line_or_sub[line]), int(self.space.line_ex_sub[line]))
        return (int(self.space.bits_of(index)[0]),)

    def _pool_kept(self) -> int:
        """How many of the expert pool's best by max rho keep their post-action grid."""
        return max(self.config.expert_k, self.config.expert_n1)

    def _keep_expert_best(
        self, candidates: list[Candidate], n_proposed: int, grids: dict, timings: dict[str, float]
    ) -> list[Candidate]:
        """The proposed candidates and the expert pool's best ``expert_k``: by simulated max rho,
        or, of its best ``expert_n1`` screened for N-1, the first by the ranking (those worse than
        doing nothing last)."""
        reference = candidates[0]
        pool = [
            c
            for c in candidates[n_proposed:]
            # an action that changes nothing (buses set where they are) takes no expert's slot
            if not c.failed and (reference.failed or abs(c.max_rho_after - reference.max_rho_after) > 1e-9)
        ]
        pool.sort(key=lambda c: c.max_rho_after)
        if self.config.expert_n1 > self.config.expert_k:
            pool = pool[: self.config.expert_n1]
            self._screen([reference, *pool], grids, timings)
            acceptable, rejected = rank(pool, reference)  # the run ranks those kept again
            pool = acceptable + rejected
        return candidates[:n_proposed] + pool[: self.config.expert_k]

    # ----- the run -----
    def run(self, obs, state_backend=None) -> RecommendationSet:
        """Recommendations for ``obs``. ``state_backend``: the live env's backend, holding the
        grid of ``obs`` (its N-1 status is screened there); without it, the current grid is
        re-solved in grid2op's simulator (a simulation with no time step ahead): the same base
        case, but with the generators at their realised output (slack share included) rather
        than their set-points, so outages share the lost power slightly differently."""
        started = time.perf_counter()
        timings: dict[str, float] = {"n1_ms": 0.0, "n1_solver_ms": 0.0}
        state_n1 = self._state_n1(obs, state_backend)
        candidates, n_proposed, timings["policy_ms"] = self._candidates(obs)
        forecast, notes = self._forecast(obs)
        solver_before = _solver_seconds(obs)

        simulated_at = time.perf_counter()
        actions = [self.space.to_grid2op(c.action_index, self.g2op_space) for c in candidates]
        grids = self._simulate(obs, candidates, actions, n_proposed)
        timings["simulate_ms"] = (time.perf_counter() - simulated_at) * 1000
        candidates = self._keep_expert_best(candidates, n_proposed, grids, timings)
        reference, others = candidates[0], candidates[1:]
        self._screen(candidates, grids, timings)

        looked_at = time.perf_counter()
        first_pass, _ = rank(others, reference)
        self._look_ahead(obs, forecast, [reference, *first_pass[: self.config.look_ahead_top]], grids)
        timings["look_ahead_ms"] = (time.perf_counter() - looked_at) * 1000
        timings["solver_ms"] = _solver_ms(obs, solver_before, candidates)

        recommendations, rejected = rank(others, reference)
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return RecommendationSet(
            reference=reference,
            recommendations=recommendations,
            rejected=rejected,
            security=_security(state_n1, reference),
            forecast=forecast.to_json(),
            timings_ms=timings,
            notes=notes,
        )

    def what_if(self, obs, action) -> Candidate:
        """The same figures for any grid2op action (e.g. an operator's): its one-step outcome, N-1
        and look-ahead, and in ``rejected_because`` why it is worse than doing nothing, if it is."""
        index = self.space.index_of_grid2op(action)
        description = self.space.describe(index) if index is not None else str(action).splitlines()[0]
        before_max = float(np.max(obs.rho))
        reference = Candidate(0, "do nothing", ("reference",), 0.0, (), before_max)
        candidate = Candidate(
            -1 if index is None else index,
            description,
            ("operator",),
            0.0,
            self._substations(index) if index is not None else (),
            before_max,
        )
        candidates = [reference, candidate]
        forecast, _ = self._forecast(obs)
        grids = self._simulate(obs, candidates, [self.g2op_space({}), action], n_proposed=2)
        self._screen(candidates, grids, {"n1_ms": 0.0, "n1_solver_ms": 0.0})
        self._look_ahead(obs, forecast, candidates, grids, actions={candidate.action_index: action})
        candidate.rejected_because = rejection(candidate, reference)
        return candidate

    def _simulate(self, obs, candidates: list[Candidate], actions: list, n_proposed: int) -> dict:
        """One batch of one-step simulations filling each candidate's figures; returns the
        post-action grids (by action index) that N-1 and look-ahead start from: every proposed
        candidate's, and of the expert's pool only those that may be among its best."""
        grids: dict[int, SolvedGrid] = {}
        pool_best: list[float] = []  # the expert pool's lowest max rho so far
        kept = self._pool_kept()

        def keep_grid(i: int, simulated: Simulated, backend) -> None:
            if simulated.done or simulated.info.get("is_illegal") or simulated.info.get("exception"):
                return
            if i >= n_proposed:
                score = float(simulated.rho.max())
                if len(pool_best) >= kept and score >= pool_best[kept - 1]:
                    return
                bisect.insort(pool_best, score)
            grids[candidates[i].action_index] = SolvedGrid.of(backend)

        # without forecasts grid2op cannot simulate a step ahead: the actions' immediate effect
        time_step = 1 if available_horizon(obs) else 0
        before = np.asarray(obs.rho, dtype=float)
        outcomes = simulate_many(obs, actions, time_step=time_step, after_each=keep_grid)
        for candidate, outcome in zip(candidates, outcomes):
            _fill(candidate, outcome, before)
        return grids

    def _screen(self, candidates: list[Candidate], grids: dict, timings: dict[str, float]) -> None:
        """N-1 of each candidate's post-action grid not screened yet; the time spent, and
        LightSim2Grid's part, added to ``timings``' ``n1_ms`` and ``n1_solver_ms``."""
        for candidate in candidates:
            grid = grids.get(candidate.action_index)
            if grid is not None and candidate.n1 is None:
                candidate.n1 = screen_n1(grid, self.lines, self.line_names)
                timings["n1_ms"] += candidate.n1.total_ms
                timings["n1_solver_ms"] += candidate.n1.solver_ms

    def _look_ahead(self, obs, forecast, candidates: list[Candidate], grids: dict, actions=None) -> None:
        if not forecast.horizon:
            candidates[0].look_ahead = skipped_look_ahead(forecast, "this grid carries no forecasts")
            return
        series = ForecastSeries(obs, self.config.horizon)
        for candidate in candidates:
            action = (actions or {}).get(candidate.action_index)
            if action is None:
                action = self.space.to_grid2op(candidate.action_index, self.g2op_space)
            start = grids.get(candidate.action_index)
            try:
                candidate.look_ahead = look_ahead(obs, action, series, forecast, start)
            except (Grid2OpException, RuntimeError, ValueError) as exc:
                # a grid the simulator cannot step: say so, keep the feed running
                reason = f"the simulator failed: {str(exc).splitlines()[0][:200]}"
                candidate.look_ahead = skipped_look_ahead(forecast, reason)

    def _state_n1(self, obs, state_backend) -> N1Screen | None:
        if state_backend is None:
            outcome = simulate_rho(obs, self.g2op_space({}), time_step=0)
            if outcome.done or outcome.info.get("exception"):
                return None
            state_backend = obs._obs_env.backend
        return screen_n1(SolvedGrid.of(state_backend), self.lines, self.line_names)

    def _forecast(self, obs) -> tuple[ForecastInfo, list[str]]:
        """The forecasts this observation carries; a clear error for a horizon beyond them."""
        available = available_horizon(obs)
        if not available:
            return ForecastInfo("none", 0), [
                "this grid's observations carry no forecasts: look-ahead skipped"
            ]
        check_horizon(self.config.horizon, available)
        return ForecastInfo(self.kind, self.config.horizon), []


def _solver_seconds(obs) -> float:
    """LightSim2Grid's cumulated solver time in grid2op's simulator (``comp_time``)."""
    return float(getattr(obs._obs_env.backend, "comp_time", 0.0))


def _solver_ms(obs, solver_before: float, candidates: list[Candidate]) -> float:
    """LightSim2Grid's own time in every power flow of a run (simulator, N-1, time series)."""
    simulator = max(_solver_seconds(obs) - solver_before, 0.0) * 1000
    n1 = sum(c.n1.solver_ms for c in candidates if c.n1 is not None)
    series = sum(c.look_ahead.solver_ms for c in candidates if c.look_ahead is not None)
    return simulator + n1 + series


def _fill(candidate: Candidate, outcome: Simulated, before: np.ndarray) -> None:
    """The one-step simulated figures and their words."""
    simulated = outcome_of(outcome)
    candidate.illegal = simulated.error.startswith("illegal")
    candidate.game_over = bool(simulated.error) and not candidate.illegal
    candidate.error = simulated.error
    candidate.max_rho_after = simulated.max_rho
    candidate.reward_after = simulated.reward
    after = simulated.rho
    if after is not None:
        now, then = before >= 1.0, after >= 1.0
        candidate.lines_relieved = tuple(int(i) for i in np.flatnonzero(now & ~then))
        candidate.new_overloads = tuple(int(i) for i in np.flatnonzero(~now & then))
        candidate.overloads_after = tuple(int(i) for i in np.flatnonzero(then))
    candidate.outcome = outcome_words(
        game_over=candidate.game_over,
        illegal=candidate.illegal,
        error=simulated.error.removeprefix("illegal: "),
        before=before,
        after=after,
    )


def _security(n1: N1Screen | None, reference: Candidate) -> StateSecurity:
    """The current grid's N-1 status and doing nothing's look-ahead, with alarms in words."""
    alarms = []
    if n1 is not None and not n1.secure and n1.worst is not None:
        worst = n1.worst
        alarms.append(
            f"not N-1 secure: losing {worst.line_name} overloads {worst.worst_line_name} "
            f"({worst.max_rho:.1%}); {n1.n_overloading} outage(s) overload a line"
        )
    la = reference.look_ahead
    if la is not None and not la.skipped and (la.first_overload_step or la.game_over_step):
        alarms.append(f"doing nothing: {la.status}")
    return StateSecurity(n1, la, tuple(alarms))
