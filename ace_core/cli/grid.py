"""``days``, ``envs`` and ``actions``: generate more days for a grid, list the grids available here,
describe actions of a grid's action space."""

from __future__ import annotations

import argparse
import json
import sys

from ace_core.cli.flags import DefaultsFormatter


def add_days(sub) -> None:
    days = sub.add_parser(
        "days",
        help="generate more days for an env with chronix2grid (into $GRIDACE_DATA_DIR)",
        formatter_class=DefaultsFormatter,
    )
    days.add_argument(
        "--env",
        required=True,
        help="l2rpn_idf_2023, or l2rpn_neurips_2020_track1 / l2rpn_wcci_2020 (cut from the 118-bus grid)",
    )
    days.add_argument("--weeks", type=int, required=True, help="how many weekly scenarios to add")
    days.add_argument("--seed", type=int, default=0, help="the same seed and week give the same data")
    days.add_argument("--first-week", type=int, default=0, help="the first week's number (more weeks later)")
    days.add_argument("--steps", type=int, default=None, help="shorter scenarios of this many steps")
    days.set_defaults(func=cmd_days)


def cmd_days(args: argparse.Namespace) -> int:
    from ace_core.grid.days.generate import generate_days

    summary = generate_days(
        args.env, args.weeks, args.seed, first_week=args.first_week, steps=args.steps, log=_progress
    )
    print(json.dumps(summary, indent=2))
    return 0


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def add_envs(sub) -> None:
    envs = sub.add_parser("envs", help="list the environments available here")
    envs.set_defaults(func=cmd_envs)


def cmd_envs(args: argparse.Namespace) -> int:
    from ace_core.grid.envs import available_env_names, downloaded_env_dir

    for name in available_env_names():
        print(f"{name}\t{downloaded_env_dir(name) or 'bundled test copy'}")
    return 0


def add_actions(sub) -> None:
    actions = sub.add_parser("actions", help="describe actions of an env's action space")
    actions.add_argument("--env", required=True)
    actions.add_argument("index", type=int, nargs="*")
    actions.set_defaults(func=cmd_actions)


def cmd_actions(args: argparse.Namespace) -> int:
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env

    space = build_action_space(make_env(args.env))
    indices = args.index or [0, 1, space.first_topology, space.n - 1]
    print(json.dumps({"env": args.env, "actions": space.n, "topology": space.n_topology}))
    for index in indices:
        print(f"{index}\t{space.describe(index)}")
    return 0
