"""Recommendations for operators, checked by simulation; no LLM involved.

:class:`RecommendationPipeline` is the one recommendation pipeline (console, HTTP API,
evaluation, benchmark). Its candidates are doing nothing (the reference), the default move
(reconnect a line whose cooldown is over, else nothing), the policy's most likely actions and
the greedy expert's best few. Each is

- simulated one step ahead (:func:`ace_core.grid.simulate.simulate_many`, batched) and read
  once into an :class:`~ace_core.grid.outcome.Outcome`;
- screened for N-1 on the grid it leads to (:mod:`ace_core.grid.contingency`, LightSim2Grid's
  contingency analysis), over every line or a configured list;
- for doing nothing and the best few, looked ahead over the forecasts' horizon
  (:mod:`ace_core.grid.lookahead`, default 12 steps = one hour), saying which kind of forecast
  it used (:mod:`ace_core.grid.forecasts`), and played on the grid as it is now (no time step
  ahead), since a forecast's load error falls on the slack generator that the one step ahead
  does not show;

then ranked by the safety order of :mod:`ace_core.recommend.ranking`, which also rejects, with the
reason, every candidate worse than doing nothing. Doing nothing's own outcome is always
returned, as the reference and as the live state's security (its N-1 status and look-ahead).

``run`` is one pass through these stages, each returning new, frozen results (the types and
their JSON are in :mod:`ace_core.recommend.outcomes`): proposals -> candidates (simulated) ->
N-1 screened -> looked ahead and checked now -> ranked; and when no single move clears the
grid's overloads, pairs of the best single moves (:mod:`ace_core.recommend.pairs`) and
continuous moves (redispatch, curtailment, storage: :mod:`ace_core.recommend.flex`) through the
same stages, ranked with them.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import replace

import numpy as np

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import greedy_candidates, reconnect_or_nothing
from ace_core.grid.contingency import N1Screen, resolve_lines, screen_n1
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.flex.moves import FlexMove, move_cost
from ace_core.grid.forecasts import (
    ForecastInfo,
    available_horizon,
    check_horizon,
    forecast_kind,
)
from ace_core.grid.lookahead import ForecastSeries, skipped_look_ahead
from ace_core.grid.outcome import failure, outcome_of
from ace_core.grid.simulate import Simulated, simulate_many, simulate_rho
from ace_core.grid.solved import SolvedGrid
from ace_core.recommend.config import PipelineConfig
from ace_core.recommend.flex import best_single, flex_action, flex_proposals, held_output, with_move
from ace_core.recommend.outcomes import Candidate, Proposal, RecommendationSet
from ace_core.recommend.pairs import pair_action, pair_proposals, pairs_needed
from ace_core.recommend.ranking import rank, rejection
from ace_core.recommend.stages import looked_ahead, solver_ms, solver_seconds, state_security
from ace_core.rl.sac import SAC

# ----------------------------------------------------------------------------- the pipeline


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
        # the contingency list accepts grid2op's names; N-1 results name lines by their one name
        self.lines = resolve_lines(self.config.contingencies, [str(n) for n in env.name_line])
        self.line_names = [space.line_name(i) for i in range(space.n_line)]
        self.kind = forecast_kind(env)
        self.max_subs = int(env.parameters.MAX_SUB_CHANGED)
        self.max_lines = int(env.parameters.MAX_LINE_STATUS_CHANGED)
        current = getattr(env, "current_obs", None)
        if current is not None and available_horizon(current):
            check_horizon(self.config.horizon, available_horizon(current))

    # ----- the run -----
    def run(
        self, obs, state_backend=None, carried: dict[int, tuple[str, ...]] | None = None
    ) -> RecommendationSet:
        """Recommendations for ``obs``. ``state_backend``: the live env's backend, holding the
        grid of ``obs`` (its N-1 status is screened there); without it, the current grid is
        re-solved in grid2op's simulator (a simulation with no time step ahead): the same base
        case, but with the generators at their realised output (slack share included) rather
        than their set-points, so outages share the lost power slightly differently.
        ``carried``: the cards shown at the previous step (action index -> sources), proposed
        again whatever the policy and the expert find now, so a card that is still safe stays
        (:func:`ace_core.recommend.ranking.shortlist`)."""
        started = time.perf_counter()
        timings: dict[str, float] = {"n1_ms": 0.0, "n1_solver_ms": 0.0}
        state_n1 = self._state_n1(obs, state_backend)
        carried = {i: s for i, s in (carried or {}).items() if 0 < i < self.space.n}
        proposals, n_proposed, timings["policy_ms"] = self._propose(obs, carried)
        forecast, notes = self._forecast(obs)
        solver_before = solver_seconds(obs)

        simulated_at = time.perf_counter()
        actions = [self.space.to_grid2op(p.action_index, self.g2op_space) for p in proposals]
        candidates, grids = self._simulate(obs, proposals, actions, n_proposed)
        timings["simulate_ms"] = (time.perf_counter() - simulated_at) * 1000
        candidates = self._keep_expert_best(candidates, n_proposed, grids, timings)
        candidates = self._screen(candidates, grids, timings)

        looked_at = time.perf_counter()
        candidates = self._look_ahead_best(obs, forecast, candidates, grids, extra=len(carried))
        timings["look_ahead_ms"] = (time.perf_counter() - looked_at) * 1000
        timings["solver_ms"] = solver_ms(obs, solver_before, candidates)

        reference, others = candidates[0], candidates[1:]
        recommendations, rejected = rank(others, reference)
        if pairs_needed(reference, recommendations) and (self.config.pairs or self.config.flex):
            more, more_notes = self._beyond_singles(obs, forecast, others, recommendations, timings)
            notes = [*notes, *more_notes]
            recommendations, rejected = rank([*others, *more], reference)
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return RecommendationSet(
            reference=reference,
            recommendations=recommendations,
            rejected=rejected,
            security=state_security(state_n1, reference),
            forecast=forecast.to_json(),
            timings_ms=timings,
            notes=notes,
        )

    def what_if(self, obs, action, move: FlexMove | None = None) -> Candidate:
        """The same figures for any grid2op action (e.g. an operator's), played with ``move`` when
        given: its one-step outcome, N-1 and look-ahead, the move's cost, and in
        ``rejected_because`` why it is worse than doing nothing, if it is."""
        index = self.space.index_of_grid2op(action)
        description = self.space.describe(index) if index is not None else str(action).splitlines()[0]
        operator = Proposal(
            -1 if index is None else index,
            description,
            ("operator",),
            0.0,
            self._substations(index) if index is not None else (),
        )
        if move:
            operator = with_move(operator, obs, move, self.space.names)
            action = action + move.to_grid2op(self.g2op_space)
        proposals = [Proposal(0, "do nothing", ("reference",), 0.0, ()), operator]
        forecast, _ = self._forecast(obs)
        candidates, grids = self._simulate(obs, proposals, [self.g2op_space({}), action], n_proposed=2)
        candidates = self._screen(candidates, grids, {"n1_ms": 0.0, "n1_solver_ms": 0.0})
        actions = {proposals[1].action_index: action}
        reference, candidate = self._look_ahead(obs, forecast, candidates, grids, actions)
        return replace(candidate, rejected_because=rejection(candidate, reference))

    # ----- 1. proposals -----
    def _propose(self, obs, carried: dict[int, tuple[str, ...]]) -> tuple[list[Proposal], int, float]:
        """Doing nothing (the reference, first), the default move, the policy's most likely
        actions, the cards carried from the previous step, then the expert's pool
        (``expert_budget`` of them, from which the run keeps the best ``expert_k``); also the
        number of non-pool proposals and the policy's time."""
        found: dict[int, Proposal] = {}

        def add(index: int, source: str, confidence: float = 0.0) -> None:
            known = found.get(index)
            if known is None:
                description, substations = self.space.describe(index), self._substations(index)
                move = self.space.move_of(index)  # a policy's continuous move: a card with its cost
                cost = move_cost(obs, move) if move is not None else None
                found[index] = Proposal(
                    index, description, (source,), confidence, substations, move=move, cost=cost
                )
            else:
                sources, confidence = known.sources + (source,), max(known.confidence, confidence)
                found[index] = replace(known, sources=sources, confidence=confidence)

        add(0, "reference")
        add(reconnect_or_nothing(obs), "default")
        started = time.perf_counter()
        if self.sac is not None and self.config.policy_k:
            policy = self.sac.policy(self.features(obs), self.space.top_mask(obs))
            for index, prob in policy.top_k(self.config.policy_k):
                add(index, "policy", prob)
        policy_ms = (time.perf_counter() - started) * 1000
        for index, sources in carried.items():
            for source in sources:
                add(index, source)
        n_proposed = len(found)
        if self.config.expert_k:
            for index in greedy_candidates(obs, self.space, self.config.expert_budget):
                add(index, "expert")
        return list(found.values()), n_proposed, policy_ms

    def _substations(self, index: int) -> tuple[int, ...]:
        if index == 0 or index >= self.space.first_move:
            return ()
        if index <= self.space.n_line:
            line = index - 1
            return (int(self.space.line_or_sub[line]), int(self.space.line_ex_sub[line]))
        return (int(self.space.bits_of(index)[0]),)

    # ----- 2. one-step simulation -----
    def _simulate(
        self, obs, proposals: list[Proposal], actions: list, n_proposed: int
    ) -> tuple[list[Candidate], dict[int, SolvedGrid]]:
        """One batch of one-step simulations: each proposal with its outcome, and the post-action
        grids (by action index) that N-1 and look-ahead start from: every proposed candidate's,
        and of the expert's pool only those that may be among its best."""
        grids: dict[int, SolvedGrid] = {}
        pool_best: list[float] = []  # the expert pool's lowest max rho so far
        kept = self._pool_kept()

        def keep_grid(i: int, simulated: Simulated, backend) -> None:
            if failure(simulated) is not None:
                return
            if i >= n_proposed:
                score = float(simulated.rho.max())
                if len(pool_best) >= kept and score >= pool_best[kept - 1]:
                    return
                bisect.insort(pool_best, score)
            grids[proposals[i].action_index] = SolvedGrid.of(backend)

        # without forecasts grid2op cannot simulate a step ahead: the actions' immediate effect
        time_step = 1 if available_horizon(obs) else 0
        before = np.asarray(obs.rho, dtype=float)
        simulated = simulate_many(obs, actions, time_step=time_step, after_each=keep_grid)
        return [Candidate.of(p, outcome_of(s, before)) for p, s in zip(proposals, simulated)], grids

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
            if not c.failed
            and (reference.failed or abs(c.outcome.max_rho_after - reference.outcome.max_rho_after) > 1e-9)
        ]
        pool.sort(key=lambda c: c.outcome.max_rho_after)
        if self.config.expert_n1 > self.config.expert_k:
            reference, *pool = self._screen([reference, *pool[: self.config.expert_n1]], grids, timings)
            acceptable, rejected = rank(pool, reference)  # the run ranks those kept again
            pool = acceptable + rejected
        return [reference, *candidates[1:n_proposed], *pool[: self.config.expert_k]]

    # ----- 3. N-1 -----
    def _screen(self, candidates: list[Candidate], grids: dict, timings: dict[str, float]) -> list[Candidate]:
        """The candidates, with the N-1 of each post-action grid not screened yet; the time spent,
        and LightSim2Grid's part, added to ``timings``' ``n1_ms`` and ``n1_solver_ms``."""
        screened = []
        for candidate in candidates:
            grid = grids.get(candidate.action_index)
            if grid is not None and candidate.n1 is None:
                candidate = replace(candidate, n1=screen_n1(grid, self.lines, self.line_names))
                timings["n1_ms"] += candidate.n1.total_ms
                timings["n1_solver_ms"] += candidate.n1.solver_ms
            screened.append(candidate)
        return screened

    # ----- 4. look-ahead -----
    def _look_ahead_best(
        self, obs, forecast, candidates: list[Candidate], grids: dict, extra: int = 0
    ) -> list[Candidate]:
        """The candidates, doing nothing and the best ``look_ahead_top`` (plus ``extra``: the
        carried cards) by a first ranking looked ahead."""
        reference, others = candidates[0], candidates[1:]
        first_pass, _ = rank(others, reference)
        chosen = [reference, *first_pass[: self.config.look_ahead_top + extra]]
        looked = {c.action_index: c for c in self._look_ahead(obs, forecast, chosen, grids)}
        return [looked.get(c.action_index, c) for c in candidates]

    def _look_ahead(
        self, obs, forecast, candidates: list[Candidate], grids: dict, actions: dict | None = None
    ) -> list[Candidate]:
        """The candidates looked ahead over the forecasts' horizon (``actions``: grid2op actions by
        action index, for those outside the action space)."""
        if not forecast.horizon:
            skipped = skipped_look_ahead(forecast, "this grid carries no forecasts")
            return [replace(candidates[0], look_ahead=skipped), *candidates[1:]]
        series = ForecastSeries(obs, self.config.horizon)
        looked, played = [], []
        for candidate in candidates:
            action = (actions or {}).get(candidate.action_index)
            if action is None:
                action = self.space.to_grid2op(candidate.action_index, self.g2op_space)
            start, hold = grids.get(candidate.action_index), held_output(obs, candidate.move)
            trajectory = looked_ahead(obs, action, series, forecast, start, hold)
            looked.append(replace(candidate, look_ahead=trajectory))
            played.append(action)
        return self._check_now(obs, looked, played)

    def _check_now(self, obs, candidates: list[Candidate], actions: list) -> list[Candidate]:
        """The candidates, each with its action played on the grid as it is now (one batch of
        simulations with no time step ahead): what the forecast's one step ahead cannot show
        (:attr:`~ace_core.recommend.outcomes.Candidate.now`)."""
        before = np.asarray(obs.rho, dtype=float)
        simulated = simulate_many(obs, actions, time_step=0)
        return [replace(c, now=outcome_of(s, before)) for c, s in zip(candidates, simulated)]

    # ----- 5. pairs and continuous moves, when no single move is safe -----
    def _beyond_singles(
        self, obs, forecast, singles: list[Candidate], recommendations, timings: dict[str, float]
    ) -> tuple[list[Candidate], list[str]]:
        """Pairs of the best single moves (:mod:`ace_core.recommend.pairs`) and continuous moves
        (:mod:`ace_core.recommend.flex`), each judged like any candidate; a note for each kind."""
        config, found, notes = self.config, [], []
        if config.pairs:
            started = time.perf_counter()
            limits = {"max_subs": self.max_subs, "max_lines": self.max_lines}
            proposals = pair_proposals(
                singles, self.space, **limits, budget=config.pairs, pool=config.pair_pool
            )
            pairs = self._judge(obs, forecast, proposals, pair_action, timings)
            timings["pairs_ms"] = (time.perf_counter() - started) * 1000
            notes.append(f"no single move clears the overloads: {len(pairs)} pair(s) of the best tried")
            found += pairs
        if config.flex:
            started = time.perf_counter()
            proposals = flex_proposals(
                obs, self.g2op_space, best_single(recommendations), count=config.flex, names=self.space.names
            )
            moves = self._judge(obs, forecast, proposals, flex_action, timings)
            timings["flex_ms"] = (time.perf_counter() - started) * 1000
            notes.append(f"topology is not enough: {len(moves)} continuous move(s) tried")
            found += moves
        return found, notes

    def _judge(self, obs, forecast, proposals: list[Proposal], to_grid2op, timings) -> list[Candidate]:
        """``proposals`` (played as ``to_grid2op(proposal, space, g2op_space)``) simulated one step
        ahead in one batch, screened for N-1 and looked ahead like any candidate."""
        if not proposals:
            return []
        actions = [to_grid2op(p, self.space, self.g2op_space) for p in proposals]
        candidates, grids = self._simulate(obs, proposals, actions, n_proposed=len(proposals))
        candidates = self._screen(candidates, grids, timings)
        by_index = {p.action_index: action for p, action in zip(proposals, actions)}
        return self._look_ahead(obs, forecast, candidates, grids, by_index)

    # ----- the state itself -----
    def _state_n1(self, obs, state_backend) -> N1Screen | None:
        if state_backend is None:
            if failure(simulate_rho(obs, self.g2op_space({}), time_step=0)) is not None:
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
