"""How good the agent's early warning is (:mod:`ace_core.recommend.alert`): live grids played for
whole days, by doing nothing or by accepting the console's first card at every step, with the
alert read at each step from the same pipeline as the console. Prints JSON per agent:

- ``precision``: of the steps with an alert, the share followed by a game over within the horizon;
- ``recall``: of the game overs, the share announced by an alert in the horizon before it;
- ``lead_steps``: for the game overs announced, how early the first alert came (median, min);
- ``false_alerts_per_day``: alerts not followed by a game over, per 288 steps played.

Both levels are scored (``failure``, the console's critical alarm, and ``overload``), each under
rules that validation days choose from: the event expected within 12, 9, 6 or 3 steps, at 1 or 2
steps in a row (``rules``: ``level:within=W:persist=P``).

    .venv/bin/python bench/alerts.py [--env rte_case14_realistic] [--split validation] [--days 6]
        [--agents do-nothing,first-card] [--demand-scale 1.0]

The policy has random weights (``untrained_policy``), so the cards are mostly the expert's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.grid.demand import check_demand_scale  # noqa: E402
from ace_core.grid.scenarios import split_of  # noqa: E402
from ace_core.live import DO_NOTHING, LiveGrid, parse_action, untrained_policy  # noqa: E402
from ace_core.live.envs import live_scenarios  # noqa: E402
from ace_core.live.recommendations import make_live_env  # noqa: E402
from ace_core.recommend.alert import FAILURE, OVERLOAD  # noqa: E402

AGENTS = ("do-nothing", "first-card")
WITHIN = (12, 9, 6, 3)
"""alert rules scored: the expected event within this many steps (12: the whole look-ahead)..."""
PERSIST = (1, 2)
"""... and expected at this many steps in a row"""


def play_day(grid: LiveGrid, agent: str) -> tuple[list[tuple[int, str, int]], int | None, int]:
    """Every alert of the day as (step, level, steps to the expected event), the game over step
    (None when the day was held) and the steps played."""
    raised: list[tuple[int, str, int]] = []
    result = grid.reset()
    while not result.done:
        alert = result.assessment.get("alert") or {}
        if alert.get("level"):
            raised.append((result.step, alert["level"], alert["in_steps"]))
        action = DO_NOTHING
        if agent == "first-card" and result.cards:
            action = parse_action({"kind": "index", "index": result.cards[0].action_index}, grid.space)
        result = grid.step(action)
    return raised, (None if result.finished else result.step), result.step


def rule_steps(raised: list[tuple[int, str, int]], level: str, within: int, persist: int) -> list[int]:
    """The steps a rule alerts at: ``level`` expected within ``within`` steps, for ``persist``
    steps in a row."""
    hits = sorted(step for step, lev, in_steps in raised if lev == level and in_steps <= within)
    kept, run = [], 0
    for i, step in enumerate(hits):
        run = run + 1 if i and hits[i - 1] == step - 1 else 1
        if run >= persist:
            kept.append(step)
    return kept


def score(days: list[tuple[list[int], int | None, int]], horizon: int) -> dict:
    """Precision, recall and lead time of alert steps against the game overs of ``days``."""
    alerts = hits = announced = failures = steps = 0
    leads = []
    for raised, game_over, played in days:
        steps += played
        alerts += len(raised)
        if game_over is None:
            continue
        failures += 1
        hits += sum(game_over - horizon <= step < game_over for step in raised)
        early = [step for step in raised if game_over - horizon <= step < game_over]
        if early:
            announced += 1
            leads.append(game_over - early[0])
    return {
        "alerts": alerts,
        "precision": round(hits / alerts, 3) if alerts else None,
        "recall": round(announced / failures, 3) if failures else None,
        "lead_steps_median": float(np.median(leads)) if leads else None,
        "lead_steps_min": int(min(leads)) if leads else None,
        "false_alerts_per_day": round((alerts - hits) / steps * 288, 2) if steps else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--split", default="validation", choices=("train", "validation", "test"))
    parser.add_argument("--days", type=int, default=6, help="days of the split played, in order")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--demand-scale", type=float, default=1.0)
    args = parser.parse_args()
    agents = args.agents.split(",")
    if unknown := [a for a in agents if a not in AGENTS]:
        parser.error(f"unknown agent(s) {', '.join(unknown)}; accepted: {', '.join(AGENTS)}")
    scale = check_demand_scale(args.demand_scale)
    env = make_live_env(args.env, demand_scale=scale)
    everything = live_scenarios(env)
    chosen = [i for i in range(len(everything)) if split_of(i, len(everything)) == args.split][: args.days]
    out = {"env": args.env, "split": args.split, "demand_scale": scale, "scenarios": len(chosen)}
    with tempfile.TemporaryDirectory() as folder:
        policy = untrained_policy(args.env, Path(folder) / "checkpoint.pt", hidden=32)
        for agent in agents:
            days = []
            for index in chosen:
                grid = LiveGrid(args.env, index, 0, policy, env=env)
                days.append(play_day(grid, agent))
                horizon = grid.pipeline.config.horizon
            rules = {}
            for level in (FAILURE, OVERLOAD):
                for within in WITHIN:
                    for persist in PERSIST:
                        alerted = [(rule_steps(d[0], level, within, persist), d[1], d[2]) for d in days]
                        rules[f"{level}:within={within}:persist={persist}"] = score(alerted, horizon)
            out[agent] = {
                "days_held": sum(d[1] is None for d in days),
                "game_overs": sum(d[1] is not None for d in days),
                "steps": sum(d[2] for d in days),
                "horizon_steps": horizon,
                "rules": rules,
            }
            print(json.dumps({agent: out[agent]}), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
