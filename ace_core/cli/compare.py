"""``compare-day``: two episodes of one day (any grid2op Runner output) side by side, as JSON."""

from __future__ import annotations

import argparse
import json


def add_compare_day(sub) -> None:
    compare = sub.add_parser(
        "compare-day",
        help="compare two EpisodeData folders of the same day: survival, overloads, actions, decision time",
    )
    compare.add_argument(
        "a", help="an episode folder grid2op's Runner wrote (or the Runner's folder above it)"
    )
    compare.add_argument("b", help="the other episode, of the same env and day")
    compare.set_defaults(func=cmd_compare_day)


def cmd_compare_day(args: argparse.Namespace) -> int:
    from ace_core.evaluation.day_compare import compare_day

    result = compare_day(args.a, args.b)
    print(
        json.dumps(
            {"env": result["env"], "day": result["day"], "a": result["a"]["kpis"], "b": result["b"]["kpis"]},
            indent=2,
        )
    )
    return 0
