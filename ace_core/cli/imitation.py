"""``mine``, ``pretrain``, ``dagger`` and ``subset``: play the expert, clone it, let the clone play
and the expert label, keep the expert's most frequent topologies.

The flags of ``mine`` are MineSpec's fields and those of ``pretrain`` and ``dagger``'s cloning are
CloneConfig's (:func:`~ace_core.cli.flags.add_dataclass_flags`); their modules import grid2op and
torch, so these commands add their flags only when they run or show their help.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ace_core.cli.flags import SPLITS, DefaultsFormatter, add_dataclass_flags, from_args, workers_of

MINE_HELP = {
    "env": None,
    "split": None,
    "expert": "greedy, greedy:BUDGET or greedy:key=value,...",
    "episodes": "first N scenarios of the split (default all)",
    "seeds": "play each scenario with grid seeds 0..N-1",
    "episode_length": "steps per scenario",
    "player": "DAgger: this policy (run directory or checkpoint) plays, the expert labels its states",
    "opponent": "line attacks in the mined episodes: env (the env's own opponent), none, or random-line",
    "demand_scale": "every load and production of the mined days times this, 0.8 to 1.3 (1.05: heavier days)",
}
"""the mine flags' help on the command line, where it is not MineSpec's docstring (None: none)"""

ACTION_WEIGHT_HELP = (
    "how many times each of the expert's real actions (not do-nothing) counts in the cloning loss"
)
PRETRAIN_HELP = {
    "epochs": None,
    "batch_size": None,
    "lr": None,
    "seed": None,
    "action_weight": ACTION_WEIGHT_HELP,
}
"""pretrain's help of the CloneConfig flags (None: the default alone)"""
DAGGER_HELP = {
    "epochs": "cloning passes per round",
    "lr": "actor learning rate while cloning",
    "seed": "cloning seed",
    "action_weight": ACTION_WEIGHT_HELP,
}
"""dagger's help of the CloneConfig flags, where it differs from CloneConfig's docstrings"""


def _add_ray_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ray worker processes")
    parser.add_argument("--ray-address", default=None, help="HOST:PORT or auto to join a Ray cluster")


def add_mine(sub) -> None:
    mine = sub.add_parser(
        "mine",
        help="play the expert over a split with Ray: action set and imitation dataset",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        add_flags=_mine_flags,
    )
    mine.set_defaults(func=cmd_mine)


def _mine_flags(mine: argparse.ArgumentParser) -> None:
    from ace_core.imitation.mining import MineSpec

    # --seeds: one grid seed per day unless asked, whatever MineSpec's default
    defaults = {"seeds": 1, "player": None}
    add_dataclass_flags(mine, MineSpec, defaults, MINE_HELP, choices={"split": SPLITS})
    _add_ray_flags(mine)
    mine.add_argument("--out", default=None, help="mine directory (default: cached by env, split, settings)")


def cmd_mine(args: argparse.Namespace) -> int:
    from ace_core.imitation.mining import MineSpec, mine

    spec = from_args(MineSpec, args)
    summary = mine(spec, Path(args.out) if args.out else None, workers_of(args))
    print(json.dumps(summary, indent=2))
    return 0


def add_pretrain(sub) -> None:
    pretrain = sub.add_parser(
        "pretrain",
        help="behaviour-clone the expert of a mine into a policy checkpoint",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        add_flags=_pretrain_flags,
    )
    pretrain.set_defaults(func=cmd_pretrain)


def _clone_inputs(parser: argparse.ArgumentParser, dataset_help: str) -> None:
    """The grid and the mines a clone learns from, shared by ``pretrain`` and ``dagger``."""
    parser.add_argument("--env", required=True)
    parser.add_argument("--dataset", required=True, action="append", help=dataset_help)


def _clone_settings(parser: argparse.ArgumentParser, helps: dict[str, str]) -> None:
    """:class:`CloneConfig`'s flags and the policy's width, shared by ``pretrain`` and ``dagger``."""
    from ace_core.imitation.cloning import CloneConfig

    add_dataclass_flags(parser, CloneConfig, helps=helps)
    parser.add_argument("--hidden", type=int, default=256, help="width of the policy's hidden layers")


def _pretrain_flags(pretrain: argparse.ArgumentParser) -> None:
    _clone_inputs(
        pretrain,
        "a mine directory or its dataset.npz; repeat to clone on several mines (DAgger's aggregate)",
    )
    pretrain.add_argument("--out", required=True, help="run directory for checkpoint.pt and pretrain.json")
    pretrain.add_argument(
        "--moves",
        type=int,
        default=0,
        help="the policy also plays the N most frequent discrete forms of the expert's continuous "
        "moves (mines of an expert with flex; 0: topology only)",
    )
    pretrain.add_argument(
        "--move-labels",
        default="all",
        help="with --moves, the decisions a move is learned at: all (wherever the expert played one) "
        "or alone (only where it played no topology action with it)",
    )
    _clone_settings(pretrain, PRETRAIN_HELP)


def cmd_pretrain(args: argparse.Namespace) -> int:
    from ace_core.imitation.cloning import CloneConfig, pretrain

    datasets = args.dataset[0] if len(args.dataset) == 1 else args.dataset
    config = from_args(CloneConfig, args)
    report = pretrain(
        args.env,
        datasets,
        Path(args.out),
        config,
        args.hidden,
        moves=args.moves,
        move_labels=args.move_labels,
    )
    print(json.dumps(report, indent=2))
    return 0


def add_dagger(sub) -> None:
    dagger = sub.add_parser(
        "dagger",
        help="DAgger: clone a mine, let the policy play the mine's days labelled by the expert, clone again",
        formatter_class=DefaultsFormatter,
        add_flags=_dagger_flags,
    )
    dagger.set_defaults(func=cmd_dagger)


def _dagger_flags(dagger: argparse.ArgumentParser) -> None:
    _clone_inputs(
        dagger,
        "the expert's mine (directory or dataset.npz), whose days every round plays again; "
        "repeat to clone on further mines too (e.g. heavier days), which are not played again",
    )
    dagger.add_argument("--rounds", type=int, default=3, help="policy-played mines after the first clone")
    dagger.add_argument("--seeds", type=int, default=1, help="grid seeds 0..N-1 per day in each round's mine")
    dagger.add_argument(
        "--expert",
        default=None,
        help="the labelling expert (default: the first mine's, as its mine.json says)",
    )
    dagger.add_argument(
        "--out", required=True, help="directory: round-K/, mine-K/, dagger.json, checkpoint.pt"
    )
    _add_ray_flags(dagger)
    _clone_settings(dagger, DAGGER_HELP)


def cmd_dagger(args: argparse.Namespace) -> int:
    from ace_core.imitation.cloning import CloneConfig
    from ace_core.imitation.dagger import DaggerSpec, run_dagger

    spec = DaggerSpec(
        env=args.env,
        dataset=args.dataset[0],
        more_datasets=tuple(args.dataset[1:]),
        rounds=args.rounds,
        seeds=args.seeds,
        expert=args.expert,
        clone=from_args(CloneConfig, args),
        hidden=args.hidden,
    )
    print(json.dumps(run_dagger(spec, Path(args.out), workers_of(args)), indent=2))
    return 0


def add_subset(sub) -> None:
    subset = sub.add_parser(
        "subset", help="save a teacher's most frequent topology actions (for --action-subset)"
    )
    subset.add_argument("--env", required=True)
    subset.add_argument("--teacher", default="greedy")
    subset.add_argument("--episodes", type=int, default=5, help="train scenarios to play")
    subset.add_argument("--top", type=int, default=200)
    subset.add_argument("--seed", type=int, default=0)
    subset.add_argument("--save", required=True, help="file to write, one action index per line")
    subset.set_defaults(func=cmd_subset)


def cmd_subset(args: argparse.Namespace) -> int:
    from ace_core.imitation.subset import frequent_topologies, save_subset

    pairs = frequent_topologies(args.env, args.teacher, args.episodes, args.top, args.seed)
    save_subset(pairs, Path(args.save))
    print(json.dumps({"env": args.env, "teacher": args.teacher, "actions": len(pairs), "file": args.save}))
    return 0
