"""``evaluate`` and ``experiment {ablations,table}``: play agents on a split with grid2op's Runner,
train and test the ACE variants, compare agents on the same episodes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ace_core.cli.flags import (
    SPLITS,
    DefaultsFormatter,
    add_config_flags,
    add_episode_flags,
    add_fanout_flags,
    add_grid_seed_flags,
    config_from,
    grid_seeds,
    workers_of,
)
from ace_core.errors import ConfigError

AGENT_SPECS = (
    "do-nothing | reconnect | greedy[:BUDGET] | greedy:key=value,... | sac:RUN_DIR[:act=R] | "
    "sac-critic:RUN_DIR[:K][:act=R] | sac-checked:RUN_DIR[:K][:stop=R][:act=R][:expert[=N]][:revert][:critic]"
)


def add_evaluate(sub) -> None:
    evaluate = sub.add_parser("evaluate", help="evaluate an agent with grid2op's Runner")
    evaluate.add_argument("--env", required=True)
    evaluate.add_argument("--agent", required=True, help=AGENT_SPECS)
    evaluate.add_argument("--split", default="test", choices=SPLITS)
    evaluate.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    add_grid_seed_flags(evaluate)
    evaluate.add_argument("--out", default=None, help="directory for EpisodeData and report.json")
    add_episode_flags(evaluate)
    add_fanout_flags(evaluate)
    evaluate.add_argument("--score", action="store_true", help="add grid2op's L2RPN 2020 score")
    evaluate.add_argument("--verbose", action="store_true", help="print every episode")
    evaluate.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ace_core.evaluation.runner import evaluate

    seeds = grid_seeds(args)
    report = evaluate(
        args.env,
        args.agent,
        args.split,
        args.episodes,
        args.out,
        seeds=seeds,
        score=args.score,
        opponent=args.opponent,
        episode_length=args.episode_length,
        demand_scale=args.demand_scale,
        demand_spread=args.demand_spread,
        workers=workers_of(args),
    )
    if not args.verbose:
        report = {k: v for k, v in report.items() if k != "episodes"}
    print(json.dumps(report, indent=2))
    return 0


def add_experiment(sub) -> None:
    experiment = sub.add_parser(
        "experiment",
        help="run the ACE ablations, compare agents, or the stress table (ace_core/evaluation/)",
    )
    which = experiment.add_subparsers(dest="which", required=True, metavar="{ablations,table,stress}")
    _add_ablations(which)
    _add_table(which)
    _add_stress(which)


def _add_ablations(which) -> None:
    ablations = which.add_parser(
        "ablations", help="train and test the ACE variants", formatter_class=DefaultsFormatter
    )
    ablations.add_argument("--out", required=True, help="directory for the runs, tables and curves")
    ablations.add_argument("--seeds", type=int, default=3, help="training seeds 0..N-1 per variant")
    ablations.add_argument(
        "--variants", default="", help="comma-separated subset of the variants (default: all)"
    )
    ablations.add_argument(
        "--eval-episodes", type=int, default=None, help="first N test scenarios (default: all)"
    )
    ablations.add_argument("--eval-seeds", type=int, default=1, help="grid seeds 0..N-1 per test scenario")
    add_config_flags(ablations)
    ablations.set_defaults(func=cmd_ablations)


def cmd_ablations(args: argparse.Namespace) -> int:
    from ace_core.evaluation.ablations import VARIANTS, command_line, run_ablations

    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else list(VARIANTS)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ConfigError(f"unknown variant(s) {unknown}; accepted: {', '.join(VARIANTS)}")
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds} must be at least 1")
    result = run_ablations(
        config_from(args),
        Path(args.out),
        args.seeds,
        variants,
        args.eval_episodes,
        tuple(range(args.eval_seeds)),
        command_line(),
    )
    print(json.dumps(result["table"], indent=2))
    return 0


def _add_table(which) -> None:
    table = which.add_parser(
        "table",
        help="evaluate several agents on the same episodes: table.csv and table.md",
        formatter_class=DefaultsFormatter,
    )
    table.add_argument("--env", required=True)
    table.add_argument(
        "--agents",
        required=True,
        help="comma-separated agent specs, e.g. do-nothing,reconnect,greedy,sac:runs/x,"
        "sac-checked:runs/x:10; sac:runs/bc-{0,1,2} adds a row per run and one over the runs",
    )
    table.add_argument("--split", default="test", choices=SPLITS, help="scenarios of this split")
    add_grid_seed_flags(table)
    table.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    add_episode_flags(table)
    add_fanout_flags(table)
    table.add_argument("--out", required=True, help="directory: one report per agent, table.csv, table.md")
    table.set_defaults(func=cmd_table)


def cmd_table(args: argparse.Namespace) -> int:
    from ace_core.evaluation.ablations import command_line
    from ace_core.evaluation.table import run_table

    rows = run_table(
        args.env,
        args.agents,
        Path(args.out),
        split=args.split,
        seeds=grid_seeds(args),
        nb_episode=args.episodes,
        opponent=args.opponent,
        episode_length=args.episode_length,
        command=command_line(),
        demand_scale=args.demand_scale,
        demand_spread=args.demand_spread,
        workers=workers_of(args),
    )
    print(json.dumps(rows, indent=2))
    return 0


def _add_stress(which) -> None:
    from ace_core.evaluation.stress import ROW_NAMES

    stress = which.add_parser(
        "stress",
        help="every agent on ordinary, heavier and attacked days: stress.csv and stress.md",
        formatter_class=DefaultsFormatter,
    )
    stress.add_argument("--env", required=True)
    stress.add_argument(
        "--agents",
        default="do-nothing,reconnect,greedy",
        help="comma-separated agent specs, as experiment table takes them "
        "(add sac:RUN and sac-checked:RUN for the plain and checked policy)",
    )
    stress.add_argument(
        "--rows",
        default="",
        help=f"comma-separated rows (default: those the grid can play but the uneven ones): {', '.join(ROW_NAMES)}",
    )
    stress.add_argument(
        "--split", default="test", choices=SPLITS, help="validation to choose, test to report"
    )
    add_grid_seed_flags(stress)
    stress.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    stress.add_argument(
        "--episode-length", type=int, default=288, help="steps per scenario (288 = one day, 864 = three)"
    )
    stress.add_argument("--out", required=True, help="directory: a table per row, stress.csv, stress.md")
    add_fanout_flags(stress)
    stress.set_defaults(func=cmd_stress)


def cmd_stress(args: argparse.Namespace) -> int:
    from ace_core.evaluation.ablations import command_line
    from ace_core.evaluation.stress import run_stress

    cells = run_stress(
        args.env,
        args.agents,
        Path(args.out),
        rows=args.rows,
        split=args.split,
        seeds=grid_seeds(args),
        nb_episode=args.episodes,
        episode_length=args.episode_length,
        command=command_line(),
        workers=workers_of(args),
    )
    print((Path(args.out) / "stress.md").read_text())
    return 0 if cells else 2
