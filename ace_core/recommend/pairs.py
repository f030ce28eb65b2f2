"""Combined actions: two moves played together, tried when no single move is safe.

When the grid is overloaded (or failing) and no candidate of the pipeline clears every overload
one step ahead, the pipeline tries pairs of its best single moves (a bounded search: the best
:data:`POOL` singles by the safety order, at most ``budget`` pairs), and a pair that is safer
than doing nothing becomes one card, with the same one-step, N-1 and look-ahead figures as any
other (:meth:`ace_core.recommend.pipeline.RecommendationPipeline.run`).

A pair must be one step's worth of changes under the grid's rules: at most ``MAX_SUB_CHANGED``
substations (never one twice) and ``MAX_LINE_STATUS_CHANGED`` line switches. On the bundled grids
both are 1, so a pair there is a line reconnection with one substation's topology: the move that
brings back a line lost to an attack or a trip while relieving its neighbours.

A pair's candidate has a negative ``action_index`` of its own (:data:`FIRST_PAIR` downwards, an
identifier only) and its two action indices in ``parts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from ace_core.grid.action_space import ActionSpace
from ace_core.recommend.outcomes import Candidate, Proposal
from ace_core.recommend.ranking import safety_key

POOL = 6
"""the best single moves (by the safety order) that pairs are made of"""
FIRST_PAIR = -1000
"""the action index of the first pair tried; the next ones count down"""


def clears_everything(candidate: Candidate) -> bool:
    """Safe one step ahead: no game over, no line overloaded."""
    return not candidate.failed and not candidate.outcome.overloads_after


def pairs_needed(reference: Candidate, recommendations: Sequence[Candidate]) -> bool:
    """Whether the grid is in trouble (doing nothing overloads a line or fails) and no single
    recommendation clears it."""
    in_trouble = reference.failed or bool(reference.outcome.overloads_after)
    return in_trouble and not any(clears_everything(c) for c in recommendations)


def pair_proposals(
    singles: Sequence[Candidate],
    space: ActionSpace,
    *,
    max_subs: int,
    max_lines: int,
    budget: int,
    pool: int = POOL,
) -> list[Proposal]:
    """Pairs of the best ``pool`` single moves that one step may play together, at most
    ``budget``, best pairs of the best singles first; each a :class:`Proposal` whose ``parts``
    are the two action indices (topology actions and reconnections: a policy's continuous moves are
    cards of their own, :mod:`ace_core.recommend.flex` combines those)."""
    moves = [
        c for c in singles if 0 < c.action_index < space.first_move and not c.failed and not c.outcome.illegal
    ]
    best = sorted(moves, key=safety_key)[:pool]
    out: list[Proposal] = []
    for first, second in combinations(best, 2):
        if len(out) >= budget:
            break
        subs = [_substation(space, c.action_index) for c in (first, second)]
        subs = [s for s in subs if s is not None]
        lines = sum(1 for c in (first, second) if c.action_index <= space.n_line)
        if len(subs) != len(set(subs)) or len(subs) > max_subs or lines > max_lines:
            continue
        out.append(
            Proposal(
                FIRST_PAIR - len(out),
                f"{first.description} and {second.description}",
                tuple(dict.fromkeys(first.sources + second.sources)),
                max(first.confidence, second.confidence),
                tuple(sorted(set(first.substations) | set(second.substations))),
                parts=(first.action_index, second.action_index),
            )
        )
    return out


def pair_action(proposal: Proposal, space: ActionSpace, g2op_space):
    """grid2op's action for a pair: its two actions together."""
    first, second = proposal.parts
    return space.to_grid2op(first, g2op_space) + space.to_grid2op(second, g2op_space)


def _substation(space: ActionSpace, index: int) -> int | None:
    return int(space.bits_of(index)[0]) if space.is_topology(index) else None
