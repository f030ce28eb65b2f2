"""Continuous moves as candidates: redispatch, curtailment and storage, tried when topology is not
enough.

When the grid is overloaded (or failing) and no single candidate of the pipeline clears every
overload one step ahead (the test of :func:`~ace_core.recommend.pairs.pairs_needed`), the
pipeline proposes the continuous moves of :func:`~ace_core.grid.flex.proposals.relief_moves`
(from the transfer factors of the most loaded line: redispatch pairs, curtailment, storage), each
alone and with the best single move, and judges them like any candidate: simulated one step
ahead, screened for N-1, looked ahead, ranked by the safety order, where their cost
(:func:`~ace_core.grid.flex.moves.move_cost`, euros per hour) comes right after safety
(:mod:`ace_core.recommend.ranking`): among equally safe cards the cheaper first, topology alone
costing nothing.

A continuous card has a negative ``action_index`` of its own (:data:`FIRST_FLEX` downwards, an
identifier only), the one topology action it is played with in ``parts`` (empty for the move
alone), its ``move`` and its ``cost``. Its look-ahead keeps what grid2op keeps of the move
(:func:`held_output`): the redispatch and the curtailment, not a storage setpoint, which holds for
one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.flex.moves import FlexMove, move_cost, supported_kinds
from ace_core.grid.flex.proposals import relief_moves
from ace_core.grid.flex.sensitivity import sensitivities
from ace_core.grid.lookahead import Hold
from ace_core.grid.names import ElementNames
from ace_core.recommend.outcomes import Candidate, Proposal

FIRST_FLEX = -2000
"""the action index of the first continuous card tried; the next ones count down"""
TARGET = 0.95
"""the loading the moves aim the most loaded line at (below 100 %, for the DC model's error)"""
SOURCE = "flex"
"""a continuous card's source (:data:`ace_core.recommend.outcomes.SOURCES`)"""


def flex_proposals(
    obs, g2op_space, best: Candidate | None, *, count: int, names: ElementNames | None = None
) -> list[Proposal]:
    """Up to ``count`` continuous moves that take flow off ``obs``'s most loaded line, each alone
    and, when there is one, with ``best`` (the safest single move): a :class:`Proposal` with its
    move and cost, described in words."""
    sens = sensitivities(obs, g2op_space)
    kinds = supported_kinds(g2op_space)  # grid2op would play the others as doing nothing
    moves = (
        [] if sens is None or not kinds else relief_moves(obs, sens, count=count, target=TARGET, kinds=kinds)
    )
    out: list[Proposal] = []
    for move in moves:
        words, cost = move.describe(names), move_cost(obs, move)
        out.append(Proposal(FIRST_FLEX - len(out), words, (SOURCE,), 0.0, (), move=move, cost=cost))
        if best is not None:
            out.append(
                Proposal(
                    FIRST_FLEX - len(out),
                    f"{best.description} and {words}",
                    (SOURCE, *(s for s in best.sources if s != SOURCE)),
                    best.confidence,
                    best.substations,
                    parts=(best.action_index,),
                    move=move,
                    cost=cost,
                )
            )
    return out


def best_single(recommendations: Sequence[Candidate]) -> Candidate | None:
    """The safest recommendation that is one topology action or reconnection of the space (not
    doing nothing, not a pair, not a continuous move): what the continuous moves are also tried with."""
    return next((c for c in recommendations if c.action_index > 0 and not c.parts and c.move is None), None)


def flex_action(proposal: Proposal, space: ActionSpace, g2op_space):
    """grid2op's action for a continuous card: its topology action, if any, with its move."""
    base = space.to_grid2op(proposal.parts[0], g2op_space) if proposal.parts else g2op_space({})
    return base + proposal.move.to_grid2op(g2op_space)


def with_move(proposal: Proposal, obs, move: FlexMove, names: ElementNames | None = None) -> Proposal:
    """An operator's ``proposal`` played with ``move``: a card of its own (``action_index`` -1,
    the topology action in ``parts``), described in words, with the move's cost."""
    words = move.describe(names)
    index = proposal.action_index
    return replace(
        proposal,
        action_index=-1,  # its own grid: neither the topology action's nor doing nothing's
        description=words if index == 0 else f"{proposal.description} and {words}",
        parts=(index,) if index > 0 else (),
        move=move,
        cost=move_cost(obs, move),
    )


def held_output(obs, move: FlexMove | None) -> Hold | None:
    """The generators' output over the look-ahead with ``move`` kept: each redispatched
    generator's forecast moved by its MW (within its Pmin and Pmax), each curtailed one capped;
    None when nothing of the move lasts past its step (no move, or storage alone)."""
    if move is None or not (move.redispatch or move.curtail):
        return None
    shift, cap = np.zeros(obs.n_gen), np.full(obs.n_gen, np.inf)
    for gen, mw in move.redispatch:
        shift[gen] = mw
    for gen, mw in move.curtail:
        cap[gen] = mw
    moved = shift != 0
    pmin, pmax = np.asarray(obs.gen_pmin, dtype=float), np.asarray(obs.gen_pmax, dtype=float)

    def hold(gen_p: np.ndarray) -> np.ndarray:
        held = np.minimum(np.asarray(gen_p, dtype=float) + shift, cap)
        return np.where(moved, np.clip(held, pmin, pmax), held)

    return hold
