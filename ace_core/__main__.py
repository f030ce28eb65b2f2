"""Command line: ``python -m ace_core {train,evaluate,experiment {ablations,table},bench,demo,export,recipes,subset,mine,pretrain,dagger,days,envs,actions} ...``.

Errors a user can fix (unknown env, bad setting, missing or foreign checkpoint...) print one line
naming the problem and what is accepted, and exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from ace_core.config import TrainConfig, config_fields
from ace_core.errors import AceError, CheckpointError, ConfigError


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends each argument's default, except to required ones and where the help already names
    it (the config flags, whose argparse default is None so that only the flags given override
    the config), and to flags without a default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default is None or "(default: " in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    for f in config_fields():
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{f.doc} (default: {f.default})".replace("%", "%%")
        if f.type is bool:
            parser.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        else:
            parser.add_argument(flag, dest=f.name, type=f.type, default=None, help=help_text)


def _config_from(args: argparse.Namespace) -> TrainConfig:
    values = {f.name: getattr(args, f.name) for f in config_fields()}
    explicit = {k: v for k, v in values.items() if v is not None}
    if getattr(args, "recipe", None):
        from ace_core.training.recipes import recipe_get

        return recipe_get(args.recipe).config(**explicit)  # explicit flags override the recipe
    return TrainConfig(**explicit)


def cmd_train(args: argparse.Namespace) -> int:
    from ace_core.checkpoint import CHECKPOINT_NAME, load_checkpoint
    from ace_core.events import JsonlSink
    from ace_core.training.tensorboard import with_tensorboard
    from ace_core.training.trainer import Trainer, write_summary

    out = Path(args.out)
    if args.resume and args.recipe:
        raise ConfigError(
            "--recipe does not apply to --resume: a resume continues with the run's own settings"
        )
    config = _config_from(args)
    if args.resume:
        saved = TrainConfig.from_dict(load_checkpoint(out / CHECKPOINT_NAME)["config"])
        # a resume takes the run's own settings; only --steps and --decisions may extend it
        budget = {
            name: getattr(args, name) for name in ("steps", "decisions") if getattr(args, name) is not None
        }
        config = dataclasses.replace(saved, **budget)
    trainer = Trainer(config, out)  # validates and builds everything before touching files
    if args.resume:
        _truncate_logs(out, after_step=load_checkpoint(out / CHECKPOINT_NAME)["loop"]["step"])
    sink = with_tensorboard(JsonlSink(out), out)
    trainer.sink = sink
    try:
        result = trainer.run(resume=args.resume)
    finally:
        sink.close()
    print(json.dumps(write_summary(out, result)))
    return 0


def _truncate_logs(out: Path, after_step: int) -> None:
    """Drop log lines written after the checkpoint: the resumed run writes them again."""
    for name in ("metrics.jsonl", "events.jsonl", "critic.jsonl"):
        path = out / name
        if path.exists():
            lines = path.read_text().splitlines()
            kept = [line for line in lines if json.loads(line).get("step", 0) <= after_step]
            path.write_text("".join(line + "\n" for line in kept))


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ace_core.evaluation.runner import evaluate

    seeds = tuple(range(args.seeds))
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
    )
    if not args.verbose:
        report = {k: v for k, v in report.items() if k != "episodes"}
    print(json.dumps(report, indent=2))
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from ace_core.evaluation.ablations import VARIANTS, command_line, run_ablations

    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else list(VARIANTS)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ConfigError(f"unknown variant(s) {unknown}; accepted: {', '.join(VARIANTS)}")
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds} must be at least 1")
    result = run_ablations(
        _config_from(args),
        Path(args.out),
        args.seeds,
        variants,
        args.eval_episodes,
        tuple(range(args.eval_seeds)),
        command_line(),
    )
    print(json.dumps(result["table"], indent=2))
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from ace_core.evaluation.ablations import command_line
    from ace_core.evaluation.table import run_table

    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds} must be at least 1")
    rows = run_table(
        args.env,
        args.agents,
        Path(args.out),
        args.split,
        tuple(range(args.seeds)),
        args.episodes,
        args.opponent,
        args.episode_length,
        command_line(),
    )
    print(json.dumps(rows, indent=2))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from ace_core.evaluation.bench import run_benchmarks

    print(json.dumps(run_benchmarks(args.env, quick=args.quick), indent=2))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Train a small SAC policy, then compare it with the baselines on test episodes."""
    import time

    from ace_core.evaluation.runner import evaluate
    from ace_core.events import JsonlSink
    from ace_core.training.tensorboard import with_tensorboard
    from ace_core.training.trainer import Trainer, write_summary

    out = Path(args.out) / time.strftime("demo-%Y%m%d-%H%M%S")
    print(f"Training SAC on {args.env} for {args.steps} steps -> {out}")
    trainer = Trainer(TrainConfig(env=args.env, steps=args.steps, seed=0), out)
    trainer.sink = with_tensorboard(JsonlSink(out), out)
    try:
        write_summary(out, trainer.run())
    finally:
        trainer.sink.close()
    print(f"Evaluating on the first {args.episodes} test episodes of {args.env} (seeds 0-{args.seeds - 1})")
    rows = []
    for spec in ("do-nothing", "reconnect", "greedy", f"sac:{out}"):
        report = evaluate(args.env, spec, "test", args.episodes, seeds=tuple(range(args.seeds)))
        rows.append(
            (spec.split(":")[0], report["survival_mean"], report["reward_mean"], report["decision_ms_p95"])
        )
        print(
            f"  {rows[-1][0]:<11} survival {rows[-1][1]:6.1%}  reward {rows[-1][2]:8.1f}  p95 decision {rows[-1][3]:7.2f} ms"
        )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ace_core.l2rpn.export import export_run

    meta = export_run(Path(args.run), Path(args.out))
    print(json.dumps({"out": args.out, **{k: v for k, v in meta.items() if k != "load_scale"}}))
    return 0


def cmd_recipes(args: argparse.Namespace) -> int:
    from ace_core.training.recipes import RECIPES

    for recipe in RECIPES.values():
        print(json.dumps({"name": recipe.name, "envs": list(recipe.envs), "settings": dict(recipe.settings)}))
        print(f"  {recipe.description}")
    return 0


def cmd_subset(args: argparse.Namespace) -> int:
    from ace_core.imitation.subset import frequent_topologies, save_subset

    pairs = frequent_topologies(args.env, args.teacher, args.episodes, args.top, args.seed)
    save_subset(pairs, Path(args.save))
    print(json.dumps({"env": args.env, "teacher": args.teacher, "actions": len(pairs), "file": args.save}))
    return 0


def cmd_mine(args: argparse.Namespace) -> int:
    from ace_core.imitation.mining import MineSpec, mine

    spec = MineSpec(
        env=args.env,
        expert=args.expert,
        split=args.split,
        episodes=args.episodes,
        seeds=args.seeds,
        episode_length=args.episode_length,
        player=args.player or "",
        opponent=args.opponent,
        demand_scale=args.demand_scale,
    )
    summary = mine(spec, Path(args.out) if args.out else None, args.workers, args.ray_address)
    print(json.dumps(summary, indent=2))
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    from ace_core.imitation.cloning import pretrain

    config = _clone_config(args)
    datasets = args.dataset[0] if len(args.dataset) == 1 else args.dataset
    print(json.dumps(pretrain(args.env, datasets, Path(args.out), config, args.hidden), indent=2))
    return 0


def _clone_config(args: argparse.Namespace):
    from ace_core.imitation.cloning import CloneConfig

    return CloneConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        action_weight=args.action_weight,
    )


def cmd_dagger(args: argparse.Namespace) -> int:
    from ace_core.imitation.dagger import DaggerSpec, run_dagger

    spec = DaggerSpec(
        env=args.env,
        dataset=args.dataset[0],
        more_datasets=tuple(args.dataset[1:]),
        rounds=args.rounds,
        seeds=args.seeds,
        expert=args.expert,
        clone=_clone_config(args),
        hidden=args.hidden,
    )
    print(json.dumps(run_dagger(spec, Path(args.out), args.workers, args.ray_address), indent=2))
    return 0


def cmd_days(args: argparse.Namespace) -> int:
    from ace_core.grid.days.generate import generate_days

    summary = generate_days(
        args.env, args.weeks, args.seed, first_week=args.first_week, steps=args.steps, log=_progress
    )
    print(json.dumps(summary, indent=2))
    return 0


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_envs(args: argparse.Namespace) -> int:
    from ace_core.grid.envs import available_env_names, downloaded_env_dir

    for name in available_env_names():
        print(f"{name}\t{downloaded_env_dir(name) or 'bundled test copy'}")
    return 0


def cmd_actions(args: argparse.Namespace) -> int:
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env

    space = build_action_space(make_env(args.env))
    indices = args.index or [0, 1, space.first_topology, space.n - 1]
    print(json.dumps({"env": args.env, "actions": space.n, "topology": space.n_topology}))
    for index in indices:
        print(f"{index}\t{space.describe(index)}")
    return 0


def _add_episode_flags(parser: argparse.ArgumentParser) -> None:
    """How evaluation episodes are played: under which line attacks, and how long."""
    parser.add_argument(
        "--opponent",
        default="env",
        help="line attacks: env (the env's own opponent), none, or random-line (grid2op's "
        "RandomLineOpponent as in rte_case14_opponent)",
    )
    parser.add_argument(
        "--episode-length", type=int, default=288, help="steps per scenario (288 = one day, 864 = three)"
    )


def _add_evaluate_parser(sub) -> None:
    evaluate = sub.add_parser("evaluate", help="evaluate an agent with grid2op's Runner")
    evaluate.add_argument("--env", required=True)
    evaluate.add_argument(
        "--agent",
        required=True,
        help="do-nothing | reconnect | greedy[:BUDGET] | greedy:key=value,... | sac:RUN_DIR[:act=R] | sac-critic:RUN_DIR[:K][:act=R] | sac-checked:RUN_DIR[:K][:stop=R][:act=R][:expert][:revert][:critic]",
    )
    evaluate.add_argument("--split", default="test", choices=("train", "validation", "test"))
    evaluate.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    evaluate.add_argument("--seeds", type=int, default=1, help="run each scenario with seeds 0..N-1")
    evaluate.add_argument("--out", default=None, help="directory for EpisodeData and report.json")
    _add_episode_flags(evaluate)
    evaluate.add_argument("--score", action="store_true", help="add grid2op's L2RPN 2020 score")
    evaluate.add_argument("--verbose", action="store_true", help="print every episode")
    evaluate.set_defaults(func=cmd_evaluate)


def _add_experiment_parser(sub) -> None:
    experiment = sub.add_parser(
        "experiment",
        help="run the ACE ablations or compare agents (see ace_core/evaluation/ablations.py, compare.py)",
    )
    which = experiment.add_subparsers(dest="which", required=True, metavar="{ablations,table}")
    ablations = which.add_parser(
        "ablations", help="train and test the ACE variants", formatter_class=_DefaultsFormatter
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
    _add_config_flags(ablations)
    ablations.set_defaults(func=cmd_experiment)

    table = which.add_parser(
        "table",
        help="evaluate several agents on the same episodes: table.csv and table.md",
        formatter_class=_DefaultsFormatter,
    )
    table.add_argument("--env", required=True)
    table.add_argument(
        "--agents",
        required=True,
        help="comma-separated agent specs, e.g. do-nothing,reconnect,greedy,sac:runs/x,"
        "sac-checked:runs/x:10; sac:runs/bc-{0,1,2} adds a row per run and one over the runs",
    )
    table.add_argument(
        "--split", default="test", choices=("train", "validation", "test"), help="scenarios of this split"
    )
    table.add_argument("--seeds", type=int, default=1, help="run each scenario with grid seeds 0..N-1")
    table.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    _add_episode_flags(table)
    table.add_argument("--out", required=True, help="directory: one report per agent, table.csv, table.md")
    table.set_defaults(func=cmd_table)


def _add_mine_parser(sub) -> None:
    mine = sub.add_parser(
        "mine",
        help="play the expert over a split with Ray: action set and imitation dataset",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    mine.add_argument("--env", required=True)
    mine.add_argument("--expert", default="greedy", help="greedy, greedy:BUDGET or greedy:key=value,...")
    mine.add_argument("--split", default="train", choices=("train", "validation", "test"))
    mine.add_argument(
        "--episodes", type=int, default=None, help="first N scenarios of the split (default all)"
    )
    mine.add_argument("--seeds", type=int, default=1, help="play each scenario with grid seeds 0..N-1")
    mine.add_argument("--episode-length", type=int, default=288, help="steps per scenario")
    mine.add_argument(
        "--opponent",
        default="env",
        help="line attacks in the mined episodes: env (the env's own opponent), none, or random-line",
    )
    mine.add_argument(
        "--demand-scale",
        type=float,
        default=1.0,
        help="every load and production of the mined days times this, 0.8 to 1.3 (1.05: heavier days)",
    )
    mine.add_argument(
        "--player",
        default=None,
        help="DAgger: this policy (run directory or checkpoint) plays, the expert labels its states",
    )
    mine.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ray worker processes")
    mine.add_argument("--ray-address", default=None, help="HOST:PORT or auto to join a Ray cluster")
    mine.add_argument("--out", default=None, help="mine directory (default: cached by env, split, settings)")
    mine.set_defaults(func=cmd_mine)


_ACTION_WEIGHT_HELP = (
    "how many times each of the expert's real actions (not do-nothing) counts in the cloning loss"
)


def _add_pretrain_parser(sub) -> None:
    pretrain = sub.add_parser(
        "pretrain",
        help="behaviour-clone the expert of a mine into a policy checkpoint",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    pretrain.add_argument("--env", required=True)
    pretrain.add_argument(
        "--dataset",
        required=True,
        action="append",
        help="a mine directory or its dataset.npz; repeat to clone on several mines (DAgger's aggregate)",
    )
    pretrain.add_argument("--out", required=True, help="run directory for checkpoint.pt and pretrain.json")
    pretrain.add_argument("--epochs", type=int, default=30)
    pretrain.add_argument("--batch-size", type=int, default=64)
    pretrain.add_argument("--lr", type=float, default=1e-3)
    pretrain.add_argument("--action-weight", type=float, default=1.0, help=_ACTION_WEIGHT_HELP)
    pretrain.add_argument("--hidden", type=int, default=256, help="width of the policy's hidden layers")
    pretrain.add_argument("--seed", type=int, default=0)
    pretrain.set_defaults(func=cmd_pretrain)


def _add_dagger_parser(sub) -> None:
    dagger = sub.add_parser(
        "dagger",
        help="DAgger: clone a mine, let the policy play the mine's days labelled by the expert, clone again",
        formatter_class=_DefaultsFormatter,
    )
    dagger.add_argument("--env", required=True)
    dagger.add_argument(
        "--dataset",
        required=True,
        action="append",
        help="the expert's mine (directory or dataset.npz), whose days every round plays again; "
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
    dagger.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ray worker processes")
    dagger.add_argument("--ray-address", default=None, help="HOST:PORT or auto to join a Ray cluster")
    dagger.add_argument("--epochs", type=int, default=30, help="cloning passes per round")
    dagger.add_argument("--batch-size", type=int, default=64, help="decisions per gradient step")
    dagger.add_argument("--lr", type=float, default=1e-3, help="actor learning rate while cloning")
    dagger.add_argument("--action-weight", type=float, default=1.0, help=_ACTION_WEIGHT_HELP)
    dagger.add_argument("--hidden", type=int, default=256, help="width of the policy's hidden layers")
    dagger.add_argument("--seed", type=int, default=0, help="cloning seed")
    dagger.set_defaults(func=cmd_dagger)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ace_core", description="GridACE core: train, evaluate, benchmark"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a SAC (or ACE) policy", formatter_class=_DefaultsFormatter)
    train.add_argument(
        "--out",
        required=True,
        help="run directory (checkpoint.pt, metrics.jsonl, events.jsonl, tensorboard/)",
    )
    train.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    train.add_argument(
        "--recipe",
        default=None,
        help="start from a named recipe (python -m ace_core recipes lists them); explicit flags override it",
    )
    _add_config_flags(train)
    train.set_defaults(func=cmd_train)

    _add_evaluate_parser(sub)

    _add_experiment_parser(sub)

    bench = sub.add_parser("bench", help="print performance figures as JSON")
    bench.add_argument("--env", action="append", help="env to benchmark (repeatable)")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions (for smoke tests)")
    bench.set_defaults(func=cmd_bench)

    demo = sub.add_parser("demo", help="train a small policy and compare it with the baselines")
    demo.add_argument("--env", default="rte_case14_realistic")
    demo.add_argument("--steps", type=int, default=20_000)
    demo.add_argument("--episodes", type=int, default=4)
    demo.add_argument("--seeds", type=int, default=1)
    demo.add_argument("--out", default="runs")
    demo.set_defaults(func=cmd_demo)

    export = sub.add_parser(
        "export", help="write a run's policy as an L2RPN submission folder (make_agent, weights)"
    )
    export.add_argument("--run", required=True, help="run directory or checkpoint file")
    export.add_argument("--out", required=True, help="new or empty folder for the submission")
    export.set_defaults(func=cmd_export)

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

    _add_mine_parser(sub)

    _add_pretrain_parser(sub)

    _add_dagger_parser(sub)

    recipes = sub.add_parser("recipes", help="list the named training recipes (for train --recipe)")
    recipes.set_defaults(func=cmd_recipes)

    days = sub.add_parser(
        "days",
        help="generate more days for an env with chronix2grid (into $GRIDACE_DATA_DIR)",
        formatter_class=_DefaultsFormatter,
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

    envs = sub.add_parser("envs", help="list the environments available here")
    envs.set_defaults(func=cmd_envs)

    actions = sub.add_parser("actions", help="describe actions of an env's action space")
    actions.add_argument("--env", required=True)
    actions.add_argument("index", type=int, nargs="*")
    actions.set_defaults(func=cmd_actions)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train" and args.steps is not None and args.steps <= 0:
        print(f"error: --steps {args.steps} must be a positive number of environment steps", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (AceError, ConfigError, CheckpointError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
