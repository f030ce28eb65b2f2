"""Train SAC with several seeds and compare it with the baselines on the test episodes.

    .venv/bin/python bench/sac_vs_baselines.py --env rte_case14_realistic --steps 30000 --seeds 3 \
        --out runs/sac_vs_baselines

Each seed trains its own policy (seed s) and is evaluated on every test episode with grid seeds
0..2; the baselines run on the same episodes and grid seeds. Prints JSON and writes
``OUT/results.json`` and ``OUT/results.md`` (mean +- std over training seeds for SAC; over the
evaluation seeds for the baselines, which have no training seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.config import TrainConfig  # noqa: E402
from ace_core.evaluation.runner import evaluate  # noqa: E402
from ace_core.training import run  # noqa: E402

EVAL_SEEDS = (0, 1, 2)


def _per_seed(report: dict, key: str) -> list[float]:
    by_seed: dict[int, list[float]] = {}
    for e in report["episodes"]:
        value = e["steps_survived"] / e["max_steps"] if key == "survival" else e["reward"]
        by_seed.setdefault(e["seed"], []).append(value)
    return [statistics.mean(v) for v in by_seed.values()]


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main() -> None:
    args = _arguments()
    out = Path(args.out)
    rows = {**_baseline_rows(args.env), "sac": _sac_row(args, out)}
    result = {
        "env": args.env,
        "steps": args.steps,
        "teacher_prob": args.teacher_prob,
        "teacher_steps": args.teacher_steps,
        "test_episodes_x_eval_seeds": len(EVAL_SEEDS),
        "rows": rows,
    }
    _write(out, result)
    print(json.dumps(result, indent=2))


def _arguments() -> argparse.Namespace:
    defaults = TrainConfig()
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="runs/sac_vs_baselines")
    parser.add_argument("--skip-train", action="store_true", help="reuse the runs already in --out")
    parser.add_argument(
        "--teacher-prob", type=float, default=defaults.get("teacher_prob"), help="expert-guided exploration"
    )
    parser.add_argument("--teacher-steps", type=int, default=defaults.get("teacher_steps"))
    return parser.parse_args()


def _baseline_rows(env: str) -> dict[str, dict]:
    rows = {}
    for spec in ("do-nothing", "reconnect", "greedy"):
        report = evaluate(env, spec, "test", seeds=EVAL_SEEDS)
        rows[spec] = {
            "survival": _mean_std(_per_seed(report, "survival")),
            "reward": _mean_std(_per_seed(report, "reward")),
            "decision_ms_p95": report["decision_ms_p95"],
            "over": "evaluation seeds 0-2",
        }
    return rows


def _sac_row(args: argparse.Namespace, out: Path) -> dict:
    """Train one policy per seed (unless --skip-train) and test each."""
    sac_survival, sac_reward, train_minutes, p95 = [], [], [], []
    for seed in range(args.seeds):
        run_dir = out / f"sac-seed{seed}"
        if not args.skip_train:
            started = time.perf_counter()
            config = TrainConfig(
                env=args.env,
                steps=args.steps,
                seed=seed,
                teacher_prob=args.teacher_prob,
                teacher_steps=args.teacher_steps,
            )
            run(config, run_dir, logs=True)
            train_minutes.append((time.perf_counter() - started) / 60)
        report = evaluate(args.env, f"sac:{run_dir}", "test", seeds=EVAL_SEEDS)
        sac_survival.append(statistics.mean(_per_seed(report, "survival")))
        sac_reward.append(statistics.mean(_per_seed(report, "reward")))
        p95.append(report["decision_ms_p95"])
    return {
        "survival": _mean_std(sac_survival),
        "reward": _mean_std(sac_reward),
        "decision_ms_p95": max(p95),
        "over": f"training seeds 0-{args.seeds - 1}",
        "train_minutes": train_minutes,
    }


def _write(out: Path, result: dict) -> None:
    """``results.json`` and ``results.md``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2))
    lines = [
        "| agent | survival (fraction of steps) | episode reward | p95 decision ms | over |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["rows"].items():
        (s, s_sd), (r, r_sd) = row["survival"], row["reward"]
        lines.append(
            f"| {name} | {s:.3f} +- {s_sd:.3f} | {r:.1f} +- {r_sd:.1f} | {row['decision_ms_p95']:.2f} | {row['over']} |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
