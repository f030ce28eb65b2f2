"""Alarms per hour on a live day, with the N-1 alarm judged against the session's baseline (as
the console does now) and against N-1 security itself (as it did before): the same grid, the same
states, the two rule sets side by side (``ace_core.live.alarms``). Doing nothing is played, so the
day and its states are the same for both; the alarms a step raises from the grid itself
(overloads, trips, maintenance, game over) are counted once for both.

    .venv/bin/python bench/alarm_rate.py [--env rte_case14_realistic] [--split test] [--days 3]

Prints JSON: per rule set, alarms raised per hour by kind, and the N-1 alarm's share.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.grid.forecasts import STEP_MINUTES  # noqa: E402
from ace_core.grid.scenarios import split_of  # noqa: E402
from ace_core.live import LiveGrid, alarms_between, n1_baseline, security_alarms, untrained_policy  # noqa: E402
from ace_core.live.envs import live_scenarios  # noqa: E402
from ace_core.live.recommendations import make_live_env  # noqa: E402


def day_alarms(grid: LiveGrid) -> tuple[Counter, Counter, int]:
    """Alarms by kind under the baseline rule (now) and the security rule (before), and steps."""
    now, before = Counter(), Counter()
    result = grid.reset()
    previous_state, previous_assessment, baseline = None, None, None
    while True:
        grid_alarms = alarms_between(
            previous_state, result.state, done=result.done, finished=result.finished, names=grid.space.names
        )
        for alarm in grid_alarms:
            now[alarm["kind"]] += 1
            before[alarm["kind"]] += 1
        if result.assessment:
            if baseline is None:
                baseline = n1_baseline(result.assessment, result.step)
            for alarm in security_alarms(previous_assessment, result.assessment, baseline):
                now[alarm["kind"]] += 1
            for alarm in security_alarms(previous_assessment, result.assessment):
                before[alarm["kind"]] += 1
            previous_assessment = result.assessment
        previous_state = result.state
        if result.done:
            return now, before, result.step
        result = grid.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--days", type=int, default=3)
    args = parser.parse_args()
    env = make_live_env(args.env)
    everything = live_scenarios(env)
    chosen = [i for i in range(len(everything)) if split_of(i, len(everything)) == args.split][: args.days]
    now, before, steps = Counter(), Counter(), 0
    with tempfile.TemporaryDirectory() as folder:
        policy = untrained_policy(args.env, Path(folder) / "checkpoint.pt", hidden=32)
        for index in chosen:
            day_now, day_before, played = day_alarms(LiveGrid(args.env, index, 0, policy, env=env))
            now.update(day_now)
            before.update(day_before)
            steps += played
    hours = steps * STEP_MINUTES / 60

    def rates(counts: Counter) -> dict:
        return {
            "per_hour": round(sum(counts.values()) / hours, 2),
            "by_kind_per_hour": {kind: round(n / hours, 2) for kind, n in sorted(counts.items())},
        }

    print(
        json.dumps(
            {
                "env": args.env,
                "split": args.split,
                "days": len(chosen),
                "hours": round(hours, 1),
                "before_n1_against_security": rates(before),
                "now_n1_against_baseline": rates(now),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
