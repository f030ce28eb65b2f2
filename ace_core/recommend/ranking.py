"""The safety order of candidate actions, and when one is worse than doing nothing.

Candidates are sorted by a lexicographic key, lower is safer; each criterion only decides
between candidates equal on every criterion before it:

1. **no game over**: the one-step simulation survives;
2. **overloads cleared**: how many of the lines overloaded now are still overloaded after;
3. **no new overload**: how many lines are overloaded after that are not now;
4. **the grid as it is now**: the action played on the current injections rather than the next
   step's forecast (:attr:`~ace_core.recommend.outcomes.Candidate.now`, computed with the
   look-ahead): a game over there first, then its max rho, counted only above 100 % and in steps
   of 1 % (so it decides only where the forecast hides an overload); a candidate not checked
   comes after those checked;
5. **N-1 worst case**: first the number of single outages that split the grid or make the power
   flow diverge (each one a game over if it happens), then the highest rho any single outage
   leads to, counted only above 100 % (every N-1-secure candidate ties here) and in steps of
   1 % (smaller differences are within what forecasts can tell);
6. **look-ahead worst case**: a game over within the horizon first (the earlier the worse), then
   the highest max rho over the horizon, again only above 100 % and in steps of 1 %; a
   candidate whose look-ahead was not computed comes after those whose look-ahead was;
7. **cost**: what a continuous move costs, euros per hour (:mod:`ace_core.grid.flex`; 0 for
   topology alone), so that among equally safe candidates the cheaper comes first;
8. **max rho next step**: the simulated max rho one step ahead;
9. **the policy's confidence** (higher first).

A candidate is **rejected** (never a recommendation, listed with the reason) when it is not
allowed now, when its simulation ends in a game over, when it leaves more lines overloaded or
a higher max rho one step ahead than doing nothing, when it changes nothing (the same max rho
and N-1 worst case as doing nothing, e.g. buses set where they already are), or when it is less
safe than doing nothing by criteria 1-6 (criteria 4 and 6 only when both were computed).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ace_core.recommend.outcomes import Candidate

RHO_STEP = 0.01
MAX_RHO_TOLERANCE = 1e-6
"""power-flow round-off: two candidates with the same grid give max rho equal to ~1e-7"""


def _over(rho: float) -> float:
    """0 below 100 %, else rho in 1 % steps (rounded up so that 100.2 % does not tie with 100 %)."""
    if rho < 1.0:
        return 0.0
    return math.ceil(round(rho / RHO_STEP, 6)) * RHO_STEP


def n1_key(candidate: Candidate) -> tuple[float, float]:
    n1 = candidate.n1
    if n1 is None or n1.error:
        return (math.inf, math.inf)
    worst = n1.worst_rho
    return (float(len(n1.diverged)), _over(worst) if worst is not None else 0.0)


def now_key(candidate: Candidate) -> tuple[float, float]:
    now = candidate.now
    if now is None:
        return (math.inf, math.inf)
    if now.failed:
        return (1.0, math.inf)
    return (0.0, _over(now.max_rho_after))


def look_ahead_key(candidate: Candidate) -> tuple[float, float]:
    la = candidate.look_ahead
    if la is None or la.skipped:
        return (math.inf, math.inf)
    if la.game_over_step is not None:
        return (1.0 / la.game_over_step, math.inf)  # sooner is worse
    return (0.0, _over(la.worst_rho))


def safety_key(candidate: Candidate) -> tuple:
    """The lexicographic key of the module docstring (lower is safer)."""
    outcome = candidate.outcome
    still_overloaded = set(outcome.overloads_after) - set(outcome.new_overloads)
    return (
        int(outcome.failed),
        len(still_overloaded),
        len(outcome.new_overloads),
        *now_key(candidate),
        *n1_key(candidate),
        *look_ahead_key(candidate),
        candidate.euros_per_hour,
        math.inf if outcome.max_rho_after is None else outcome.max_rho_after,
        -candidate.confidence,
    )


def rejection(candidate: Candidate, reference: Candidate) -> str:
    """Why ``candidate`` is worse than doing nothing (``reference``); empty when it is not."""
    outcome, nothing = candidate.outcome, reference.outcome
    if outcome.illegal:
        return candidate.words
    if outcome.game_over:
        return "game over in simulation" + ("" if nothing.game_over else " (doing nothing survives)")
    if nothing.game_over:
        return ""
    n_after, n_ref = len(outcome.overloads_after), len(nothing.overloads_after)
    if n_after > n_ref:
        return f"leaves {n_after} overloaded line(s) where doing nothing leaves {n_ref}"
    if outcome.max_rho_after > nothing.max_rho_after + MAX_RHO_TOLERANCE:
        return (
            f"raises max rho to {outcome.max_rho_after:.1%} where doing nothing gives "
            f"{nothing.max_rho_after:.1%}"
        )
    if _same_as(candidate, reference):
        return "changes nothing: the same outcome as doing nothing"
    mine, ref = safety_key(candidate), safety_key(reference)
    if mine[1:3] > ref[1:3]:
        return (
            f"less safe than doing nothing one step ahead: {mine[1]} overload(s) kept and {mine[2]} "
            f"new, where doing nothing keeps {ref[1]} and creates {ref[2]}"
        )
    if candidate.now is None or reference.now is None:
        mine = (*mine[:3], *ref[3:5], *mine[5:])  # not compared: the criteria after it decide
    elif mine[1:3] == ref[1:3] and mine[3:5] > ref[3:5]:
        return (
            f"worse than doing nothing on the grid as it is now: {candidate.now_words} against "
            f"{reference.now_words}"
        )
    if mine[1:5] == ref[1:5] and mine[5:7] > ref[5:7]:
        return f"less N-1 secure than doing nothing: {_n1_words(candidate)} against {_n1_words(reference)}"
    if mine[1:7] == ref[1:7] and _both_looked_ahead(candidate, reference) and mine[7:9] > ref[7:9]:
        return (
            f"worse than doing nothing over the next hour: {candidate.look_ahead.status} against "
            f"{reference.look_ahead.status}"
        )
    return ""


def _same_as(candidate: Candidate, reference: Candidate) -> bool:
    """The same grid as doing nothing (e.g. buses set to where they already are): the same max
    rho and the same N-1 worst case, to round-off."""
    if abs(candidate.outcome.max_rho_after - reference.outcome.max_rho_after) > 1e-9:
        return False
    mine, ref = candidate.n1, reference.n1
    if mine is None or ref is None or mine.worst_rho is None or ref.worst_rho is None:
        return False
    return abs(mine.worst_rho - ref.worst_rho) <= 1e-9


def _both_looked_ahead(a: Candidate, b: Candidate) -> bool:
    return all(c.look_ahead is not None and not c.look_ahead.skipped for c in (a, b))


def _n1_words(candidate: Candidate) -> str:
    n1 = candidate.n1
    if n1 is None or n1.error:
        return "not screened"
    worst = n1.worst
    text = (
        f"worst outage {worst.line_name} -> {worst.worst_line_name} at {worst.max_rho:.1%}"
        if worst
        else "no outage"
    )
    if n1.diverged:
        text += f", {len(n1.diverged)} outage(s) diverge"
    return text


def rank(candidates: list[Candidate], reference: Candidate) -> tuple[list[Candidate], list[Candidate]]:
    """(recommendations best first with their rank and the reason for it set, rejected with their
    reason set), as new candidates."""
    judged = [replace(c, rejected_because=rejection(c, reference), rank=None) for c in candidates]
    kept = sorted((c for c in judged if not c.rejected_because), key=safety_key)
    rejected = [c for c in judged if c.rejected_because]
    ranked = [replace(c, rank=i + 1) for i, c in enumerate(kept)]
    return [replace(c, rank_reason=rank_reason(ranked, i)) for i, c in enumerate(ranked)], rejected


# ----- the rank in words -----------------------------------------------------------------------
CRITERIA = (
    "surviving the step",
    "overloads left",
    "new overloads",
    "game over on the grid as it is now",
    "max rho on the grid as it is now",
    "N-1 outages that split the grid",
    "N-1 worst case",
    "game over within the look-ahead",
    "look-ahead worst case",
    "cost",
    "max rho next step",
    "policy confidence",
)
"""the names of :func:`safety_key`'s criteria, in its order"""


def _pct(value: float) -> str:
    return "not computed" if value == math.inf else f"{value:.0%}"


def _values(index: int, candidate: Candidate) -> str:
    """``candidate``'s value on criterion ``index``, as the operator reads it."""
    key = safety_key(candidate)
    if index == 0:
        return "game over" if key[0] else "survives"
    if index in (1, 2, 5):
        return f"{key[index]:.0f}"
    if index in (3, 4):
        now = candidate.now
        if now is None:
            return "not checked"
        if index == 3:
            return "game over" if now.failed else "survives"
        return "below 100%" if key[4] == 0 else _pct(now.max_rho_after)
    if index == 6:
        n1 = candidate.n1
        if n1 is None or n1.error or n1.worst_rho is None:
            return "not screened"
        return f"{n1.worst_rho:.0%}" if n1.worst_rho >= 1.0 else "no N-1 overload"
    if index == 7:
        la = candidate.look_ahead
        if la is None or la.skipped:
            return "not looked ahead"
        return "none" if la.game_over_step is None else f"at step {la.game_over_step}"
    if index == 8:
        return "below 100%" if key[8] == 0 else _pct(key[8])
    if index == 9:
        return f"{key[9]:.0f} EUR/h"
    if index == 10:
        return _pct(key[10])
    return f"{candidate.confidence:.0%}"


def _first_difference(mine: Candidate, other: Candidate) -> int | None:
    for index, (a, b) in enumerate(zip(safety_key(mine), safety_key(other), strict=True)):
        if a != b:
            return index
    return None


def rank_reason(ranked: list[Candidate], index: int) -> str:
    """Why the card at ``index`` of ``ranked`` (best first) sits where it does, in the safety
    order's terms: the first criterion on which it beats the card below (for the last card, on
    which the card above beats it), all earlier criteria being equal. E.g. "#1 above #2 on N-1
    worst case: 104% against 112%"."""
    me = ranked[index]
    if len(ranked) == 1:
        return f"#{me.rank}: the only action safer than doing nothing"
    upper, lower = (me, ranked[index + 1]) if index + 1 < len(ranked) else (ranked[index - 1], me)
    which = _first_difference(upper, lower)
    if which is None:
        return f"#{upper.rank} and #{lower.rank} tie on every criterion"
    relation = f"#{upper.rank} above #{lower.rank}" if upper is me else f"#{lower.rank} below #{upper.rank}"
    first, second = (upper, lower) if upper is me else (lower, upper)
    earlier = " (equal before that)" if which else ""
    return (
        f"{relation} on {CRITERIA[which]}: {_values(which, first)} against {_values(which, second)}{earlier}"
    )


def shortlist(ranked: list[Candidate], count: int, carried=()) -> list[Candidate]:
    """The ``count`` cards an operator is shown, best first, ranked 1..n with their reasons: the
    safest; then the cards of the previous step (``carried``: their action indices) that are
    still recommendations keep their places, so a card lasts as long as its situation, the
    safest always first; and when none of them is the policy's and one of the policy's proposals
    leaves no overload, the best of those takes the last place (the policy's own advice is shown
    when it is safe)."""
    carried = set(carried)
    if count <= 0 or not ranked:
        return []
    stay = [c for c in ranked[1:] if c.action_index in carried]
    others = [c for c in ranked[1:] if c.action_index not in carried]
    shown = sorted([ranked[0], *(stay + others)[: count - 1]], key=lambda c: c.rank or 0)
    if not any("policy" in c.sources for c in shown):
        on_cards = {c.action_index for c in shown}
        safe = [
            c
            for c in ranked
            if c.action_index not in on_cards and "policy" in c.sources and not c.outcome.overloads_after
        ]
        if safe:
            shown = [*shown[:-1], safe[0]]
    reranked = [replace(c, rank=i + 1) for i, c in enumerate(shown)]
    return [replace(c, rank_reason=rank_reason(reranked, i)) for i, c in enumerate(reranked)]
