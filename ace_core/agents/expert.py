"""The greedy expert: a wide one-step search by simulation, worth imitating.

At each step:

1. **Reconnect first**: the default action is reconnect-or-nothing (a line whose cooldown is
   over goes back in service).
2. **Stressed** (max rho >= ``threshold``): simulate, in one batch with ``simulate_many``,

   - the default,
   - the mined action set first when one is given (``actions=FILE``), then the topologies this
     expert has already played successfully in this process (the search learns them),
   - "all to bus 1" for every split substation (going back to the reference topology),
   - every legal topology of the substations at both ends of the ``lines`` most loaded lines,
     each substation's configurations closest to its current one first (fewest elements changing
     bus), round-robin over the substations,

   at most ``budget`` candidates in all (on the 36-bus grids, every topology of every substation
   but the 65,505 of substation 16, of which the closest ones fit). Topology actions that change
   nothing (:func:`~ace_core.grid.candidates.disguised_noops`) are never candidates.
3. **Pick** the candidate with the lowest simulated max rho (a game over or an illegal action
   counts as infinity). **Tie-break**: max rho rounded to 1e-3, then the fewest elements changing
   bus, then the order above, so the default wins every tie and a topology is played only when it
   strictly lowers the simulated max rho.
   **N-1** (``n1=K``, off by default): the K best candidates by the order above that do not end
   the game are each re-simulated and screened for the loss of every line
   (:func:`~ace_core.grid.contingency.screen_actions`, LightSim2Grid's contingency analysis), and
   the pick is the one with the best worst single outage: first the fewest outages that cut off a
   load or generator or diverge, then the lowest max rho after the worst other outage (to 1e-3),
   then the order above (simulated max rho, bus changes, list order). So with K >= 2 the expert may
   play a candidate with a slightly higher max rho now for a grid that survives losing a line
   better. Each screening is counted in ``Search.screened`` (contingency analyses), its
   re-simulation among the simulations. With ``attacked=1`` (off by default) this screening and
   the guard's (step 4) cover only the lines the env's opponent can strike
   (:func:`~ace_core.grid.opponents.attackable_lines`; every line where it strikes none): the
   outages an attack brings, rather than every line's.
   **Now** (``now=K``, off by default), before the pick and N-1: the forecast of the next step
   misses what the slack generator will carry (the forecast's load error lands on it: about 0.8 %
   of the load, 35-40 MW, on a heavier grown 118-bus day), so a topology that leaves the slack
   generator on a bus with one line can overload that line in reality while its simulation shows
   it fine, and the search, trusting the forecast, never takes it back. With ``now``, the best
   candidate is simulated again on the current injections (grid2op's ``time_step=0``) and scored
   by the worse of the two; then the best again, until the best has been checked both ways or K
   have been (up to K simulations; ``Search.rechecked``).
   **Blind** (``blind=1``, with ``flex``; off by default): when every candidate's simulation fails,
   doing nothing included, the simulator sees nothing (on a heavier 118-bus day grid2op refused
   every simulated dispatch, ``ImpossibleRedispatching``, while the real steps went on). The
   default is then played with the release of step 4, unsimulated, so that the moves in force
   come down.
4. **Calm** (max rho < ``safe``) with a split substation: simulate putting each split substation
   back to the reference topology and play the best one if its simulated max rho stays below
   ``safe``; otherwise the default. With ``flex``, first: when continuous moves are in force
   (redispatch, curtailment, storage), release them as far as one step allows
   (:func:`~ace_core.grid.flex.proposals.release_move`) if the grid stays below ``safe``. With
   ``release=R`` (between ``safe`` and ``threshold``), the same release is tried on any step below
   R and played if its simulated max rho stays below R, so that moves do not stay in force
   through hours of max rho between ``safe`` and the threshold.
   **Guard** (``guard=G``, off by default), first, on any step from ``safe`` up to the threshold:
   the grid after doing nothing is screened for the loss of each line (LightSim2Grid's contingency
   analysis, as ``n1``); when the worst outage the power flow survives puts a line at rho G or
   more, the candidates of step 2 are simulated, the :data:`GUARD_CANDIDATES` best that stay below
   the threshold are screened too, and the one with the best worst outage (the ``n1`` order) is
   played if it is strictly better than doing nothing's, else the default. An opponent strikes
   a loaded line, and on a heavier grid one outage can overload the rest before the next step's
   search: the guard acts before the stress, where the search of step 2 acts after it.
5. **Beyond topology** (``flex=K``, off by default): when the pick of step 3 does not bring the
   simulated max rho under ``threshold``, up to K continuous moves are proposed from the most
   loaded line's transfer factors (:mod:`ace_core.grid.flex`: redispatch pairs, curtailment,
   storage) and each is simulated alone (with the default) and with the pick: 1 + up to 2K
   simulations. The lowest simulated max rho wins, then the lowest cost per hour
   (:func:`~ace_core.grid.flex.moves.move_cost`); it is played only if it strictly lowers the
   pick's max rho (to 1e-3), and, unless it brings max rho under the threshold, by at least
   ``gain`` (0 by default): moves that each take a little off an overload that stays would
   otherwise pile up until grid2op finds no dispatch that meets the ramps, and every simulation
   fails (``ImpossibleRedispatching``). A move stays in force until released (grid2op keeps
   redispatch and curtailment). With ``swap=1``, while moves are in force each proposal is also
   simulated in their place (:func:`~ace_core.grid.flex.proposals.swap_move`: the release of step
   4 played with it), up to 2K more simulations; on a tie in max rho the swap wins. With
   ``exact=1``, a generator's first redispatch is asked less its actual dispatch, so its target
   moves by the move's MW and does not freeze the curtailment's compensation it carries. With
   ``stay=H``, the move is played only if grid2op can go on meeting its dispatch for H steps of
   doing nothing after it, followed over the forecasts (:func:`~ace_core.grid.flex.stay.
   stay_failure`, up to H simulations a move checked); otherwise the next move in that order is
   checked, so that a move is not added that leaves the simulator blind within the hour.

Spec syntax (``load_agent``): ``greedy``, ``greedy:BUDGET`` or comma-separated settings, e.g.
``greedy:budget=3000,lines=2,threshold=0.9,safe=0.8,actions=runs/mine/action_set.json`` or
``greedy:n1=4`` or ``greedy:flex=8``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from ace_core.agents.expert_order import Search, max_rho, n1_key, rank_key
from ace_core.config.expert import ExpertConfig, parse_expert_spec
from ace_core.errors import AgentSpecError
from ace_core.grid import candidates as cand
from ace_core.grid.action_set import load_action_set
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.contingency import N1Screen, screen_actions
from ace_core.grid.flex.moves import FlexMove, move_cost, supported_kinds
from ace_core.grid.flex.proposals import as_target_move, release_move, relief_moves, swap_move
from ace_core.grid.flex.sensitivity import sensitivities
from ace_core.grid.flex.stay import stay_failure
from ace_core.grid.simulate import simulate_many, simulate_rho

GUARD_CANDIDATES = 4
"""candidates a guarded step screens for N-1: the best by simulated max rho (step 4)"""


def expert_from_spec(spec: str, space: ActionSpace, g2op_space) -> Expert:
    """The expert an agent spec (``greedy...``) names, with its mined action set loaded and checked."""
    kind, _, argument = spec.partition(":")
    if kind != "greedy":
        raise AgentSpecError(
            f"unknown expert {spec!r}; accepted: greedy, greedy:BUDGET, greedy:key=value,..."
        )
    return Expert.from_config(space, g2op_space, parse_expert_spec(argument))


class Expert:
    """The search of the module docstring, reusable by the agent and the miner."""

    def __init__(
        self,
        space: ActionSpace,
        g2op_space,
        config: ExpertConfig,
        mined: list[int] | None = None,
        outages: tuple[int, ...] | None = None,
    ):
        self.space = space
        self.g2op_space = g2op_space
        self.config = config
        self.mined = list(mined or [])
        self.outages = outages or None
        """the lines whose loss N-1 screens (``n1``, ``guard``); None: every line"""
        self.played: Counter[int] = Counter()
        self.redispatched: set[int] = set()
        """generators redispatched by this expert's moves in the episode (``exact``)"""

    def reset(self) -> None:
        """A new episode: what the search learned and the generators it redispatched are forgotten."""
        self.played.clear()
        self.redispatched.clear()

    @classmethod
    def from_config(
        cls, space: ActionSpace, g2op_space, config: ExpertConfig, outages: tuple[int, ...] | None = None
    ) -> Expert:
        mined = load_action_set(config.actions, space) if config.actions else None
        return cls(space, g2op_space, config, mined, outages)

    def candidates(self, obs, default: int) -> list[int]:
        space, mask = self.space, self.space.action_mask(obs)
        noop = cand.disguised_noops(obs, space)
        learned = [i for i, _ in self.played.most_common(self.config.learned)]
        first = [i for i in [*self.mined, *learned] if mask[i]]
        subs = cand.loaded_substations(obs, space, self.config.lines)
        per_sub = [cand.substation_topologies(obs, space, sub, mask) for sub in subs]
        depth = max((len(rows) for rows in per_sub), default=0)
        searched = [rows[k] for k in range(depth) for rows in per_sub if k < len(rows)]
        ordered = [default, *cand.legal_reconnections(obs, space, mask), *first]
        ordered += [*cand.reference_topologies(obs, space, mask), *searched]
        unique = [i for i in dict.fromkeys(ordered) if not noop[i]]
        return unique[: self.config.budget]

    def evaluate(self, obs, indices: list[int], time_step: int = 1) -> list[float]:
        """Simulated max rho of each candidate: on the next step's forecast (``time_step=1``) or on
        the current injections (0)."""
        grid2op = [self.space.to_grid2op(i, self.g2op_space) for i in indices]
        return [max_rho(o) for o in simulate_many(obs, grid2op, time_step)]

    def checked_now(self, obs, indices: list[int], scores: list[float]) -> tuple[list[float], int]:
        """(scores, simulations) with ``now=K``: best first in the expert's order, a candidate's score
        becomes the worse of its forecast and its current-injection max rho, until the best is one
        so checked or K are (step 3 of the module docstring)."""
        scores, checked = list(scores), set()
        changes = [self._changes(obs, i) for i in indices]
        while len(checked) < self.config.now:
            best = min(range(len(indices)), key=lambda k: rank_key(scores[k], changes[k], k))
            if best in checked or not np.isfinite(scores[best]):
                break
            scores[best] = max(scores[best], self.evaluate(obs, [indices[best]], time_step=0)[0])
            checked.add(best)
        return scores, len(checked)

    def best(self, obs, indices: list[int], scores: list[float]) -> int:
        changes = [self._changes(obs, i) for i in indices]
        order = min(range(len(indices)), key=lambda k: rank_key(scores[k], changes[k], k))
        return indices[order]

    def best_n1(self, obs, indices: list[int], scores: list[float]) -> tuple[int, int]:
        """(action, contingency analyses run): :meth:`best`, or with ``n1=K`` the best K that do not
        end the game re-ranked by their worst single outage (step 3 of the module docstring)."""
        changes, order = self._ranked(obs, indices, scores)
        top = [k for k in order if np.isfinite(scores[k])][: self.config.n1]
        if len(top) < 2:
            return indices[order[0]], 0
        best, _ = self._best_outage(obs, indices, scores, changes, top)
        return indices[best], len(top)

    def _ranked(self, obs, indices: list[int], scores: list[float]) -> tuple[list[int], list[int]]:
        """(each candidate's bus changes, the positions in the expert's order)."""
        changes = [self._changes(obs, i) for i in indices]
        return changes, sorted(range(len(indices)), key=lambda k: rank_key(scores[k], changes[k], k))

    def _best_outage(
        self, obs, indices: list[int], scores: list[float], changes: list[int], top: list[int]
    ) -> tuple[int, N1Screen | None]:
        """Among the positions ``top``, each screened for N-1, the one whose worst single outage is
        best (:func:`n1_key`, then the expert's order), and its screening."""
        grid2op = [self.space.to_grid2op(indices[k], self.g2op_space) for k in top]
        screens = screen_actions(obs, grid2op, self.outages)
        j = min(
            range(len(top)),
            key=lambda j: (*n1_key(screens[j]), *rank_key(scores[top[j]], changes[top[j]], top[j])),
        )
        return top[j], screens[j]

    def search(self, obs, known: dict[int, float] | None = None) -> Search:
        """One step of the module docstring. ``known``: candidates someone already simulated (action
        -> max rho, the default first), ranked with the search's own and not simulated again, so
        ``len(candidates) - len(known)`` simulations are spent."""
        default = cand.real_action(obs, self.space, cand.reconnect_or_nothing(obs))
        if obs.rho.max() >= self.config.threshold:
            known = known or {}
            fresh = [i for i in self.candidates(obs, default) if i not in known]
            indices = [*known, *fresh]
            scores = [*known.values(), *self.evaluate(obs, fresh)]
            scores, rechecked = self.checked_now(obs, indices, scores) if self.config.now else (scores, 0)
            action, screened = self.best_n1(obs, indices, scores)
            search = Search(action, indices, scores, True, screened, rechecked=rechecked)
            blind = self.config.flex and self.config.blind and not np.isfinite(scores).any()
            release = release_move(obs) if blind else None
            if release is not None:
                return replace(search, action=default, move=release)
            if self.config.flex:
                search = self.beyond_topology(obs, search, default)
            if self.space.is_topology(search.action):
                self.played[search.action] += 1
            return search
        if self.config.guard and obs.rho.max() >= self.config.safe:
            return self.guarded(obs, default)
        below = self.config.release or self.config.safe
        if self.config.flex and obs.rho.max() < below:
            release = release_move(obs)
            if release is not None:
                rho = self._simulate_with(obs, default, release)
                if rho < below:
                    return Search(default, [], [], False, move=release, flexed=1)
        if default == 0 and obs.rho.max() < self.config.safe:
            revert = cand.reference_topologies(obs, self.space)
            if revert:
                scores = self.evaluate(obs, revert)
                best = self.best(obs, revert, scores)
                if scores[revert.index(best)] < self.config.safe:
                    return Search(best, revert, scores, False)
                return Search(0, revert, scores, False)
        return Search(default, [], [], False)

    def guarded(self, obs, default: int) -> Search:
        """Step 4's guard: the default, or the candidate whose grid survives its worst single line
        outage better when the default's grid would not (see the module docstring)."""
        base = screen_actions(obs, [self.space.to_grid2op(default, self.g2op_space)], self.outages)[0]
        if base is None or base.error or base.worst_rho is None or base.worst_rho < self.config.guard:
            return Search(default, [], [], False, screened=1)
        indices = self.candidates(obs, default)
        scores = self.evaluate(obs, indices)
        changes, order = self._ranked(obs, indices, scores)
        top = [k for k in order if indices[k] != default and scores[k] < self.config.threshold]
        top = top[:GUARD_CANDIDATES]
        searched = Search(default, indices, scores, False, screened=1 + len(top))
        if not top:
            return searched
        best, screen = self._best_outage(obs, indices, scores, changes, top)
        return replace(searched, action=indices[best]) if n1_key(screen) < n1_key(base) else searched

    def beyond_topology(self, obs, search: Search, default: int) -> Search:
        """Step 5 of the module docstring: ``search`` with a continuous move when one helps."""
        picked = search.max_rho[search.candidates.index(search.action)]
        if picked < self.config.threshold:
            return search
        sens = sensitivities(obs, self.g2op_space)
        moves = (
            []
            if sens is None
            else relief_moves(
                obs,
                sens,
                count=self.config.flex,
                target=self.config.threshold,
                kinds=supported_kinds(self.g2op_space),
            )
        )
        swaps = self._swaps(obs, moves)
        asked = {move: self._asked(obs, move) for move in [*moves, *swaps]}
        tops = list(dict.fromkeys([default, search.action]))
        tried = [(top, move) for move in asked for top in tops]
        rhos = [self._simulate_with(obs, top, asked[move]) for top, move in tried]
        spent = 1 + len(tried)  # the sensitivities' own simulation of doing nothing
        if not tried:
            return replace(search, flexed=spent)
        swapped = set(swaps)
        order = sorted(
            range(len(tried)),
            key=lambda k: (
                round(rhos[k], 3),
                tried[k][1] not in swapped,
                move_cost(obs, tried[k][1]).euros_per_hour,
            ),
        )
        for k in order:
            relieved = rhos[k] < self.config.threshold or picked - rhos[k] >= self.config.gain
            if not (round(rhos[k], 3) < round(picked, 3) and relieved):
                break  # the rest relieve no more
            top, move = tried[k]
            if self.config.stay:
                stay = stay_failure(obs, self._grid2op_with(top, asked[move]), self.config.stay)
                spent += stay.simulations
                if not stay.holds:
                    continue
            self.redispatched.update(gen for gen, _ in move.redispatch)
            return replace(search, action=top, move=asked[move], flexed=spent)
        return replace(search, flexed=spent)

    def _swaps(self, obs, moves: list[FlexMove]) -> list[FlexMove]:
        """With ``swap``: each move in place of the moves in force (none when nothing is in force)."""
        release = release_move(obs) if self.config.swap else None
        if release is None:
            return []
        swaps = (swap_move(obs, move, release) for move in moves)
        return list(dict.fromkeys(swap for swap in swaps if swap is not None))

    def _asked(self, obs, move: FlexMove) -> FlexMove:
        """With ``exact``: ``move`` as grid2op must be asked for it (:func:`~ace_core.grid.flex.
        proposals.as_target_move`, the generators this expert redispatched in the episode known)."""
        return as_target_move(obs, move, self.redispatched) if self.config.exact else move

    def _simulate_with(self, obs, index: int, move: FlexMove) -> float:
        return max_rho(simulate_rho(obs, self._grid2op_with(index, move)))

    def _grid2op_with(self, index: int, move: FlexMove):
        return self.space.to_grid2op(index, self.g2op_space) + move.to_grid2op(self.g2op_space)

    def _changes(self, obs, index: int) -> int:
        """Elements an action moves to another bus (0 for do-nothing, 1 for a reconnection or a
        continuous move of a policy that plays them)."""
        if not self.space.is_topology(index):
            return int(index > 0)
        sub, buses = self.space.bits_of(index)
        start = self.space.sub_start[sub]
        current = np.asarray(obs.topo_vect[start : start + len(buses)])
        same = int(((buses != current) & (current > 0)).sum())
        return min(same, int(((3 - buses != current) & (current > 0)).sum()))
