"""How long a console card stays actionable: the live grid played for a day, doing nothing, with
the cards the console shows at each step (``ace_core.live.LiveGrid``, the same shortlist as the
feed). A card lives while the same action is among the cards at consecutive steps, as the feed
carries it (``webapp/operations/services/feed.py``). Prints JSON: cards, and their life in steps
(median, p10, p90, max).

    .venv/bin/python bench/card_lifetime.py [--env l2rpn_case14_sandbox] [--scenario 0] [--steps 288]

The policy has random weights (``untrained_policy``, as the tests use): its proposals are rarely
safe, so the cards are mostly the expert's; a trained policy's can only add cards.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.live import LiveGrid, untrained_policy  # noqa: E402


def lifetimes(grid: LiveGrid, steps: int) -> tuple[list[int], int]:
    """(the life in steps of every card that ended, the steps played)."""
    alive: dict[int, int] = {}  # action index -> steps shown so far
    ended: list[int] = []
    result = grid.reset()
    played = 0
    while played < steps and not result.done:
        shown = {card.action_index for card in result.cards}
        for action in [a for a in alive if a not in shown]:
            ended.append(alive.pop(action))
        for action in shown:
            alive[action] = alive.get(action, 0) + 1
        result = grid.step()
        played += 1
    return ended + list(alive.values()), played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="l2rpn_case14_sandbox")
    parser.add_argument("--scenario", type=int, default=0)
    parser.add_argument("--steps", type=int, default=288)
    parser.add_argument("--k", type=int, default=3, help="cards shown per step (the session's setting)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        policy = untrained_policy(args.env, Path(folder) / "checkpoint.pt", hidden=32)
        grid = LiveGrid(args.env, args.scenario, 0, policy, k=args.k)
        lives, played = lifetimes(grid, args.steps)
        grid.close()
    life = np.asarray(lives or [0])
    print(
        json.dumps(
            {
                "env": args.env,
                "scenario": args.scenario,
                "steps_played": played,
                "cards": len(lives),
                "life_steps_median": float(np.median(life)),
                "life_steps_p10": float(np.percentile(life, 10)),
                "life_steps_p90": float(np.percentile(life, 90)),
                "life_steps_max": int(life.max()),
                "cards_living_10_steps_or_more": int((life >= 10).sum()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
