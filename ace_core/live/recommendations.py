"""The live grid's recommendations: the recommendation pipeline (:mod:`ace_core.recommend.pipeline`) on the
live env, and its cards as the console shows and persists them.

Live envs carry a one-hour horizon of forecasts: the datasets that ship fewer steps (the 2020
grids, the sandbox) get them built from their chronics (:func:`make_live_env`), and every message
names the kind (``forecast.kind``), so an oracle or persistence is never shown as a real forecast.
"""

from __future__ import annotations

from typing import Any

from ace_core.grid.envs import make_env
from ace_core.grid.forecasts import DEFAULT_HORIZON, available_horizon, make_env_with_forecasts
from ace_core.recommend.outcomes import Candidate, RecommendationSet
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline

LIVE_FORECAST_KIND = "perfect"
"""forecasts built for envs that ship fewer than :data:`DEFAULT_HORIZON` steps"""
ENVS_WITH_HOURLY_FORECASTS = frozenset({"l2rpn_idf_2023"})
"""datasets whose own forecast files reach one hour (12 steps)"""
LIVE_EXPERT_BUDGET = 32
"""candidates the expert simulates each step (the pipeline's default is 16): the earlier console's
greedy fallback tried 32, and on the sandbox with line 9 overloaded 16 find no action clearing it
where 32 find three, for ~5 ms more"""
TOP_OUTAGES = 3
"""outages listed per candidate's N-1 in every step message (the state's own N-1 lists 10)"""


def make_live_env(name: str, **kwargs):
    """An env for live sessions: with a one-hour forecast horizon (``kwargs``: those of
    :func:`ace_core.grid.envs.make_env`, e.g. ``demand_scale``)."""
    if name in ENVS_WITH_HOURLY_FORECASTS:
        return make_env(name, **kwargs)
    return make_env_with_forecasts(name, LIVE_FORECAST_KIND, DEFAULT_HORIZON, **kwargs)


def live_pipeline(env, space, *, k: int = 3, sac=None, features=None) -> RecommendationPipeline:
    """The pipeline of a live grid; ``k``: the policy's most likely actions considered. The
    look-ahead spans one hour, or the forecasts of an env made otherwise (e.g. a test's), which
    every message then states."""
    current = getattr(env, "current_obs", None)
    available = available_horizon(current) if current is not None else 0
    horizon = min(DEFAULT_HORIZON, available) if available else DEFAULT_HORIZON
    policy_k = k if sac is not None else 0
    config = PipelineConfig(
        policy_k=policy_k,
        expert_budget=LIVE_EXPERT_BUDGET,
        horizon=horizon,
        # every card shows its look-ahead and its check on the grid as it is now: all candidates
        # kept are looked ahead (~0.1-0.3 ms each) and simulated once more (one batch)
        look_ahead_top=policy_k + PipelineConfig.expert_k + 1,
    )
    return RecommendationPipeline(env, space, config, sac, features)


def card_source(sources: tuple[str, ...] | list[str]) -> str:
    """One word for where a card comes from: flex (a continuous move, :mod:`ace_core.recommend.flex`),
    policy, expert, both, or default (reconnect)."""
    found = set(sources)
    if "flex" in found:
        return "flex"
    if {"policy", "expert"} <= found:
        return "both"
    for source in ("policy", "expert", "default", "operator"):
        if source in found:
            return source
    return "reference"


def card_dict(candidate: Candidate) -> dict[str, Any]:
    """A recommendation card: its headline figures, and the rest (N-1, look-ahead, the check on
    the grid as it is now, outcome in words, substations) under ``figures``."""
    data, outcome = candidate.to_json(TOP_OUTAGES), candidate.outcome
    return {
        "action_index": candidate.action_index,
        "parts": list(candidate.parts),
        "description": candidate.description,
        "confidence": round(candidate.confidence, 4),
        "source": card_source(candidate.sources),
        "max_rho_before": round(outcome.max_rho_before, 4),
        "max_rho_after": None if outcome.max_rho_after is None else round(outcome.max_rho_after, 4),
        "lines_relieved": list(outcome.lines_relieved),
        "new_overloads": list(outcome.new_overloads),
        "error": outcome.error,
        "figures": figures_of(data),
    }


N1_TIMINGS = ("solver_ms", "total_ms")
FIGURE_KEYS = (
    "sources",
    "substations",
    "rank",
    "rank_reason",
    "outcome",
    "overloads_after",
    "game_over",
    "illegal",
    "now",
    "n1",
    "look_ahead",
    "rejected_because",
)


MOVE_KEYS = ("move", "cost")
"""a card with a continuous move also carries the move and its cost (MW moved, euros per hour)"""


def figures_of(candidate_json: dict[str, Any]) -> dict[str, Any]:
    """What a card shows beyond its headline: ``Candidate.to_json`` less the headline keys and the
    N-1's timings (kept in the step's ``timings_ms``), so equal grids give equal cards; with the
    move and its cost for a card that has one."""
    figures = {key: candidate_json.get(key) for key in FIGURE_KEYS}
    figures.update({key: candidate_json[key] for key in MOVE_KEYS if candidate_json.get(key)})
    if figures["n1"]:
        figures["n1"] = {k: v for k, v in figures["n1"].items() if k not in N1_TIMINGS}
    return figures


def assessment_dict(result: RecommendationSet, shown: list[Candidate] | None = None) -> dict[str, Any]:
    """The step's assessment beside its cards: doing nothing's outcome (the reference), the
    candidates rejected by simulation with the reason, the recommendations safer than doing
    nothing but not among the ``shown`` cards (``also_safe``), the live grid's N-1 status and
    look-ahead with alarms, the early warning (:mod:`ace_core.recommend.alert`), the forecast
    used, notes and timings."""
    data = result.to_json(TOP_OUTAGES)
    on_cards = {c.action_index for c in (result.recommendations if shown is None else shown)}
    return {
        "reference": data["reference"],
        "also_safe": [
            {
                "action_index": c.action_index,
                "parts": list(c.parts),
                "description": c.description,
                "source": card_source(c.sources),
                "max_rho_after": c.outcome.max_rho_after,
                **({"move": c.move.to_dict()} if c.move else {}),
            }
            for c in result.recommendations
            if c.action_index not in on_cards
        ],
        "rejected": [
            {
                "action_index": c["action_index"],
                "parts": c["parts"],
                "description": c["description"],
                "source": card_source(c["sources"]),
                "max_rho_after": c["max_rho_after"],
                "outcome": c["outcome"],
                "rejected_because": c["rejected_because"],
                **({"move": c["move"]} if c["move"] else {}),
            }
            for c in data["rejected"]
        ],
        "security": data["security"],
        "alert": data["alert"],
        "forecast": data["forecast"],
        "notes": data["notes"],
        "timings_ms": {k: round(v, 2) for k, v in data["timings_ms"].items()},
    }
