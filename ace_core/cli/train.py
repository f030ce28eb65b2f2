"""``train``, ``demo`` and ``recipes``: train a policy, try one against the baselines, list the
named training recipes."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from ace_core.cli.flags import DefaultsFormatter, add_config_flags, config_from, workers_of
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError


def add_train(sub) -> None:
    train = sub.add_parser("train", help="train a SAC (or ACE) policy", formatter_class=DefaultsFormatter)
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
    train.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Ray worker processes for the run's own mines (pretrain_mine=auto) and its validations; the run is the same whatever their number",
    )
    train.add_argument(
        "--ray-address",
        default=None,
        help="HOST:PORT, ray://HOST:PORT or auto: the run's mines and validations on that Ray cluster (--workers actors), not on Ray started here",
    )
    add_config_flags(train)
    train.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    if args.steps is not None and args.steps <= 0:
        raise ConfigError(f"--steps {args.steps} must be a positive number of environment steps")
    workers = workers_of(args)
    if args.resume and args.recipe:
        raise ConfigError(
            "--recipe does not apply to --resume: a resume continues with the run's own settings"
        )
    from ace_core.training import run

    out = Path(args.out)
    config = config_from(args)
    if args.resume:
        config = _resumed_config(args, out)
    if workers.address:  # joined before anything is written; the run's mines and validations use it
        workers.up()
    result = run(config, out, resume=args.resume, logs=True, workers=workers)
    print(json.dumps(result.as_dict()))
    return 0


def _resumed_config(args: argparse.Namespace, out: Path) -> TrainConfig:
    """A resume takes the run's own settings; only --steps and --decisions may extend it."""
    from ace_core.checkpoint import CHECKPOINT_NAME, load_checkpoint

    saved = TrainConfig.from_dict(load_checkpoint(out / CHECKPOINT_NAME)["config"])
    budget = {name: getattr(args, name) for name in ("steps", "decisions") if getattr(args, name) is not None}
    return dataclasses.replace(saved, **budget)


def add_demo(sub) -> None:
    demo = sub.add_parser("demo", help="train a small policy and compare it with the baselines")
    demo.add_argument("--env", default="rte_case14_realistic")
    demo.add_argument("--steps", type=int, default=20_000)
    demo.add_argument("--episodes", type=int, default=4)
    demo.add_argument("--seeds", type=int, default=1)
    demo.add_argument("--out", default="runs")
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """Train a small SAC policy, then compare it with the baselines on test episodes."""
    import time

    from ace_core.evaluation.runner import evaluate
    from ace_core.training import run

    out = Path(args.out) / time.strftime("demo-%Y%m%d-%H%M%S")
    print(f"Training SAC on {args.env} for {args.steps} steps -> {out}")
    run(TrainConfig(env=args.env, steps=args.steps, seed=0), out, logs=True)
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


def add_recipes(sub) -> None:
    recipes = sub.add_parser("recipes", help="list the named training recipes (for train --recipe)")
    recipes.set_defaults(func=cmd_recipes)


def cmd_recipes(args: argparse.Namespace) -> int:
    from ace_core.training.recipes import RECIPES

    for recipe in RECIPES.values():
        print(json.dumps({"name": recipe.name, "envs": list(recipe.envs), "settings": dict(recipe.settings)}))
        print(f"  {recipe.description}")
    return 0
