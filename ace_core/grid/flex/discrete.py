"""Discrete continuous moves for the policy: the expert's moves, quantised, the most frequent kept.

The expert sizes each move to the state (:mod:`~ace_core.grid.flex.proposals`: the MW that bring
the loaded line under its target, within one step's ramps), so no two of its moves are alike. A
policy picks among a fixed list of actions, as the L2RPN winners' agents did with theirs, so each
move the expert played is given a *discrete form* (:func:`discrete_move`) that means the same on
any state:

- a **redispatch**: its largest pair, one generator up and one down by the same MW, the MW rounded
  down to one of :data:`MW_STEPS` (grid2op adds a redispatch to the generator's target, so the
  pair is the same change whatever is in force; rounding down keeps it within the ramps the
  expert's move respected);
- else a **curtailment**: its first generator capped at a whole tenth of its Pmax, rounded down
  (at least the relief the expert asked for);
- else a **storage** setpoint, its MW rounded down to one of :data:`MW_STEPS`.

:func:`mined_moves` keeps the ``top`` most frequent discrete forms of a mine's moves (ties: the
first played first); :meth:`ActionSpace.with_moves <ace_core.grid.action_space.ActionSpace.with_moves>`
puts them after the topology actions, and cloning labels each decision where the expert played a
move with the index of its discrete form when that form was kept
(:meth:`~ace_core.imitation.data.Dataset.with_moves`). A move's legality on a state (ramps, Pmax,
renewables only) is :func:`~ace_core.grid.flex.moves.refusal`'s.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import numpy as np

from ace_core.grid.flex.moves import FlexMove

MW_STEPS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""the MW a discrete redispatch pair or storage setpoint may move (rounded down to the nearest)"""
CURTAIL_STEP = 0.1
"""a discrete curtailment caps a generator at a multiple of this share of its Pmax"""


def _step_down(mw: float) -> float:
    """The largest of :data:`MW_STEPS` not above ``abs(mw)`` (0 below the smallest)."""
    kept = [step for step in MW_STEPS if step <= abs(mw) + 1e-9]
    return kept[-1] if kept else 0.0


def discrete_move(move: FlexMove, gen_pmax) -> FlexMove | None:
    """The discrete form of ``move`` (the module docstring), None when it rounds to nothing."""
    if move.redispatch:
        ups = [(mw, gen) for gen, mw in move.redispatch if mw > 0]
        downs = [(-mw, gen) for gen, mw in move.redispatch if mw < 0]
        if ups and downs:
            (up_mw, up), (down_mw, down) = max(ups), max(downs)
            mw = _step_down(min(up_mw, down_mw))
            return FlexMove(redispatch=tuple(sorted(((up, mw), (down, -mw))))) if mw else None
        gen, mw = max(move.redispatch, key=lambda pair: abs(pair[1]))
        step = _step_down(mw)
        return FlexMove(redispatch=((gen, float(np.sign(mw)) * step),)) if step else None
    if move.curtail:
        gen, cap = move.curtail[0]
        pmax = float(gen_pmax[gen])
        share = np.floor(cap / pmax / CURTAIL_STEP + 1e-9) * CURTAIL_STEP
        return FlexMove(curtail=((gen, round(float(share) * pmax, 1)),)) if share < 1 else None
    if move.storage:
        unit, mw = move.storage[0]
        step = _step_down(mw)
        return FlexMove(storage=((unit, float(np.sign(mw)) * step),)) if step else None
    return None


def mined_moves(moves: Iterable[FlexMove], gen_pmax, top: int) -> list[FlexMove]:
    """The ``top`` most frequent discrete forms of ``moves`` (ties: first seen first)."""
    forms = (discrete_move(move, gen_pmax) for move in moves)
    counts = Counter(form for form in forms if form is not None)
    return [form for form, _ in counts.most_common(top)]


def move_json(move: FlexMove | None) -> str:
    """How a mine stores the move played with a decision (empty: none)."""
    return json.dumps(move.to_dict(), sort_keys=True) if move else ""


def moves_from_json(texts: Iterable[str]) -> list[FlexMove | None]:
    """The moves of :func:`move_json`'s strings (None for the empty ones)."""
    return [FlexMove.from_dict(json.loads(text)) if text else None for text in texts]
