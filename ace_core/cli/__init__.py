"""Command line: ``python -m ace_core {train,evaluate,experiment {ablations,table},bench,demo,export,recipes,subset,mine,pretrain,dagger,days,envs,actions,compare-day} ...``.

One module per family of commands, each command's parser beside its handler: :mod:`.train`
(train, demo, recipes), :mod:`.evaluate` (evaluate, experiment), :mod:`.imitation` (mine,
pretrain, dagger, subset), :mod:`.grid` (days, envs, actions), :mod:`.tools` (bench, export) and :mod:`.compare` (compare-day);
:mod:`.flags` generates flags from dataclasses.

Errors a user can fix (unknown env, bad setting, missing or foreign checkpoint...) print one line
naming the problem and what is accepted, and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys

from ace_core.cli import compare, evaluate, grid, imitation, tools, train
from ace_core.cli.flags import CommandParser
from ace_core.errors import AceError, CheckpointError, ConfigError

COMMANDS = (
    train.add_train,
    evaluate.add_evaluate,
    evaluate.add_experiment,
    tools.add_bench,
    train.add_demo,
    tools.add_export,
    imitation.add_subset,
    imitation.add_mine,
    imitation.add_pretrain,
    imitation.add_dagger,
    train.add_recipes,
    grid.add_days,
    grid.add_envs,
    grid.add_actions,
    compare.add_compare_day,
)
"""what adds each command's parser, in the order ``--help`` lists them"""


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="python -m ace_core", description="GridACE core: train, evaluate, benchmark")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_command in COMMANDS:
        add_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (AceError, ConfigError, CheckpointError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
