"""The paper's ablations: ``python -m ace_core experiment ablations --env ENV --seeds 3 --steps N --out DIR``.

Every variant trains with the same settings and the same number of environment steps, one run per
training seed, then its policy is evaluated on the env's **test** scenarios (never trained on)
through grid2op's Runner, at the runs' ``demand_scale``: runs trained on heavier days
(``--demand-scale 1.1``) are tested on heavier test days, where most moves leave a line overloaded
and the chooser's pick matters (``unsafe picks`` measures how much of the shortlist is unsafe).
Variants (a subset can be picked with ``--variants``):

==================  ==========================================================================
sac                 SAC only (``llm=none``)
ace                 ACE: LLM actor + critic + mixed buffer (+ LoRA rounds when enabled)
ace-no-actor        without the Policy Actor
ace-no-critic       without the Value Critic
ace-rbar-0.3        r_bar = -0.3 (fewer, worse decisions refined)
ace-rbar+0.3        r_bar = +0.3 (more decisions refined); ``ace`` itself uses the base r_bar
ace-traj-state      critic trajectory selection by state (``ace`` uses the base selection)
ace-traj-action     critic trajectory selection by action
random-control      actor's LLM replaced by a uniform pick among the same candidates, same
                    simulation gate, no critic: compare with ace-no-critic
==================  ==========================================================================

``DIR`` gets ``ablations.md`` and ``ablations.csv`` (mean +- std over training seeds of test
survival and episode reward, LLM calls, refinement acceptance, first-choice acceptance before and
after LoRA rounds), ``runs.csv`` (one row per run),
``curves.csv`` and ``curves.svg`` (training survival per episode window against environment
steps, mean over seeds), and each run's own directory. Runs that already hold a ``summary.json``
are reused, so an interrupted experiment continues where it stopped; so are their test reports,
unless ``--eval-seeds`` or ``--eval-episodes`` changed. A finished run trained with other settings
(another ``--steps`` or ``--demand-scale``, say) is refused before anything runs, as
``train --resume`` refuses it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import shlex
import statistics
import sys
import time
from pathlib import Path

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.evaluation.svg import line_chart

VARIANTS: dict[str, dict] = {
    "sac": {"llm": "none"},
    "ace": {},
    "ace-no-actor": {"actor": False},
    "ace-no-critic": {"critic": False},
    "ace-rbar-0.3": {"r_bar": -0.3},
    "ace-rbar+0.3": {"r_bar": 0.3},
    "ace-traj-state": {"trajectory_selection": "state"},
    "ace-traj-action": {"trajectory_selection": "action"},
    "random-control": {"llm": "random", "critic": False},
}


def variant_config(base: TrainConfig, name: str, seed: int) -> TrainConfig:
    """The config of one variant: the base settings, an LLM when the base has none, the overrides."""
    if name not in VARIANTS:
        raise ConfigError(f"unknown variant {name!r}; accepted: {', '.join(VARIANTS)}")
    llm = base.llm if base.llm != "none" else "local"
    values = {"llm": llm, **VARIANTS[name], "seed": seed}
    return dataclasses.replace(base, **values).validate()


def run_ablations(
    base: TrainConfig,
    out: Path,
    seeds: int,
    variants: list[str],
    eval_episodes: int | None,
    eval_seeds: tuple[int, ...],
    command: str = "",
) -> dict:
    from ace_core.training import run

    out = Path(out)
    for name in variants:
        for seed in range(seeds):  # every variant's settings are valid and match its finished runs
            _check_reusable(variant_config(base, name, seed), out / name / f"seed{seed}")
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for name in variants:
        for seed in range(seeds):
            run_dir = out / name / f"seed{seed}"
            config = variant_config(base, name, seed)
            summary_path = run_dir / "summary.json"
            if not summary_path.exists():
                print(f"[{time.strftime('%H:%M:%S')}] training {name} seed {seed} -> {run_dir}", flush=True)
                run(config, run_dir, resume=(run_dir / "checkpoint.pt").exists(), logs=True)
            summary = json.loads(summary_path.read_text())
            report = _test_report(base, run_dir, eval_episodes, eval_seeds)
            last = _last_metrics(run_dir)
            refinements = last.get("llm/refinements", 0.0)
            runs.append(
                {
                    "variant": name,
                    "seed": seed,
                    "steps": summary["steps"],
                    "train_minutes": summary["seconds"] / 60,
                    "test_survival": test_survival(report),
                    "test_reward": report["reward_mean"],
                    "llm_calls": last.get("llm/calls", 0.0),
                    "refinements": refinements,
                    "accepted": last.get("llm/accepted", 0.0),
                    "acceptance_rate": last.get("llm/accepted", 0.0) / refinements
                    if refinements
                    else float("nan"),
                    **first_round_acceptance(run_dir),
                    "unsafe_picks": unsafe_share(run_dir),
                    "shapings": last.get("llm/shapings", 0.0),
                    "refine_seconds": _mean_metric(run_dir, "llm/refine_seconds"),
                    "call_seconds": _mean_metric(run_dir, "llm/call_seconds"),
                }
            )
            print(json.dumps(runs[-1]), flush=True)
    table = _aggregate(runs, variants)
    _write_outputs(out, base, runs, table, variants, seeds, eval_episodes, eval_seeds, command)
    return {"runs": runs, "table": table}


def _check_reusable(config: TrainConfig, run_dir: Path) -> None:
    """A finished run at ``run_dir`` is reused only when it was trained with ``config``'s settings;
    ConfigError naming those that differ otherwise (nothing is trained or evaluated then)."""
    from ace_core.checkpoint import load_checkpoint

    if not (run_dir / "summary.json").exists():
        return
    changed = config.differences(load_checkpoint(run_dir)["config"])
    if changed:
        raise ConfigError(
            f"{run_dir} holds a run trained with other settings ({', '.join(changed)} differ); "
            "remove it to train it again, or give another --out"
        )


def _test_report(
    base: TrainConfig, run_dir: Path, eval_episodes: int | None, eval_seeds: tuple[int, ...]
) -> dict:
    """The run's test evaluation, on the test days at the runs' ``demand_scale`` (the stress they
    trained for), reused from ``test_report.json`` when it was made with the same scenarios, grid
    seeds and scale (another ``--eval-seeds``, ``--eval-episodes`` or scale evaluates again)."""
    from ace_core.agents.spec import AgentSpec
    from ace_core.evaluation.runner import evaluate

    path = run_dir / "test_report.json"
    wanted = {"eval_episodes": eval_episodes, "seeds": list(eval_seeds)}
    if path.exists():
        report = json.loads(path.read_text())
        same_days = {key: report.get(key) for key in wanted} == wanted
        if same_days and report.get("demand_scale", 1.0) == base.demand_scale:  # older: as they are
            return report
    spec = str(AgentSpec("sac", str(run_dir)))
    report = (
        evaluate(base.env, spec, "test", eval_episodes, seeds=eval_seeds, demand_scale=base.demand_scale)
        | wanted
    )
    path.write_text(json.dumps(report, indent=2))
    return report


def test_survival(report: dict) -> float:
    """Mean fraction of each test scenario survived, from the scenario's own length (its name ends in
    ``+LENGTH``): reports written before evaluate.py divided by the chronic step stay comparable."""
    fractions = [
        min(e["steps_survived"], int(e["scenario"].rsplit("+", 1)[1])) / int(e["scenario"].rsplit("+", 1)[1])
        for e in report["episodes"]
    ]
    return statistics.mean(fractions)


def _refinements(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [event for event in events if event.get("event") == "refinement" and event["rounds"]]


def first_round_acceptance(run_dir: Path) -> dict[str, float]:
    """Share of refinements whose first choice simulation accepted (no feedback round needed), made
    with the base model and with a LoRA adapter: what the rounds of fine-tuning taught the actor."""
    first: dict[bool, list[bool]] = {False: [], True: []}
    for event in _refinements(run_dir):
        first[event["adapter_version"] > 0].append(bool(event["rounds"][0]["accepted"]))
    return {
        f"first_round_{name}": statistics.mean(hits) if hits else float("nan")
        for name, hits in (("base", first[False]), ("lora", first[True]))
    }


def unsafe_share(run_dir: Path) -> float:
    """Share of the chooser's simulated picks that are unsafe: illegal, ending the game, or leaving
    a line at or over its limit. The random control picks uniformly, so its share estimates the
    shortlist's; the LLM's says whether it picks safer than chance."""
    unsafe = [
        bool(round_["error"]) or _at_limit(round_["simulated_max_rho"])
        for event in _refinements(run_dir)
        for round_ in event["rounds"]
        if round_["action_index"] is not None  # a parsed pick, simulated
    ]
    return statistics.mean(unsafe) if unsafe else float("nan")


def _at_limit(max_rho: float | None) -> bool:
    return max_rho is None or not math.isfinite(max_rho) or max_rho >= 1.0


def _last_metrics(run_dir: Path) -> dict:
    """The last reported value of every metric: rows carry different metrics (a validation row
    holds only ``eval/...``), so the last row alone would drop the counters."""
    last: dict = {}
    for row in _metric_rows(run_dir):
        last.update(row)
    return last


def _metric_rows(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _mean_metric(run_dir: Path, key: str) -> float:
    values = [row[key] for row in _metric_rows(run_dir) if key in row]
    return statistics.mean(values) if values else float("nan")


def _mean_std(values: list[float]) -> tuple[float, float]:
    values = [v for v in values if v == v]  # drop NaN
    if not values:
        return float("nan"), float("nan")
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _aggregate(runs: list[dict], variants: list[str]) -> list[dict]:
    table = []
    for name in variants:
        rows = [r for r in runs if r["variant"] == name]
        entry = {"variant": name, "seeds": len(rows)}
        for key in (
            "test_survival",
            "test_reward",
            "llm_calls",
            "acceptance_rate",
            "first_round_base",
            "first_round_lora",
            "unsafe_picks",
            "shapings",
            "refine_seconds",
            "train_minutes",
        ):
            entry[key + "_mean"], entry[key + "_std"] = _mean_std([r[key] for r in rows])
        table.append(entry)
    return table


def _curves(out: Path, runs: list[dict], variants: list[str]) -> dict[str, list[tuple[float, float]]]:
    """Mean over seeds of the training survival reported at each metrics step."""
    curves = {}
    for name in variants:
        by_step: dict[int, list[float]] = {}
        for run in (r for r in runs if r["variant"] == name):
            for row in _metric_rows(out / name / f"seed{run['seed']}"):
                if "charts/survival" in row:
                    by_step.setdefault(row["step"], []).append(row["charts/survival"])
        curves[name] = [(float(s), statistics.mean(v)) for s, v in sorted(by_step.items())]
    return curves


def _fmt(mean: float, std: float, digits: int) -> str:
    if mean != mean:
        return "-"
    return f"{mean:.{digits}f} +- {std:.{digits}f}"


def _write_outputs(
    out: Path,
    base: TrainConfig,
    runs: list[dict],
    table: list[dict],
    variants: list[str],
    seeds: int,
    eval_episodes: int | None,
    eval_seeds: tuple[int, ...],
    command: str,
) -> None:
    _write_rows(out / "runs.csv", runs)
    _write_rows(out / "ablations.csv", table)
    curves = _curves(out, runs, variants)
    with open(out / "curves.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", "step", "train_survival_mean_over_seeds"])
        for name, points in curves.items():
            writer.writerows([name, int(x), f"{y:.4f}"] for x, y in points)
    (out / "curves.svg").write_text(
        line_chart(
            curves,
            f"{base.env}: training survival (mean over {seeds} seed(s))",
            "environment steps",
            "fraction of episode survived",
        )
    )
    (out / "ablations.md").write_text(
        "\n".join(_markdown(base, table, seeds, eval_episodes, eval_seeds, command)) + "\n"
    )


def _write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _markdown(
    base: TrainConfig,
    table: list[dict],
    seeds: int,
    eval_episodes: int | None,
    eval_seeds: tuple[int, ...],
    command: str,
) -> list[str]:
    """The lines of ``ablations.md``: what was run, the table, the settings and the command."""
    lines = [
        f"# ACE ablations on {base.env}",
        "",
        f"{base.steps} environment steps per run, training seeds 0-{seeds - 1}; test survival and reward "
        f"on {f'the first {eval_episodes}' if eval_episodes else 'all'} test scenarios with grid seeds "
        f"{list(eval_seeds)}{_scaled(base.demand_scale)}, "
        "mean +- std over training seeds. LLM calls: actor choices + critic calls per run; acceptance: "
        "refinements whose LLM action simulation proved strictly better than the RL action; first "
        "round: refinements accepted at the first choice, before any fine-tuning (base) and with "
        "a LoRA adapter (lora); unsafe picks: the chooser's simulated picks that were illegal, ended "
        "the game or left a line at or over its limit (the random control's share is the shortlist's).",
        "",
        "| variant | seeds | test survival | test episode reward | LLM calls | acceptance | first round: base | first round: lora | unsafe picks | shapings | s / refinement | train min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in table:
        lines.append(
            f"| {e['variant']} | {e['seeds']} | {_fmt(e['test_survival_mean'], e['test_survival_std'], 3)} | "
            f"{_fmt(e['test_reward_mean'], e['test_reward_std'], 1)} | {_fmt(e['llm_calls_mean'], e['llm_calls_std'], 0)} | "
            f"{_fmt(e['acceptance_rate_mean'], e['acceptance_rate_std'], 2)} | "
            f"{_fmt(e['first_round_base_mean'], e['first_round_base_std'], 2)} | "
            f"{_fmt(e['first_round_lora_mean'], e['first_round_lora_std'], 2)} | "
            f"{_fmt(e['unsafe_picks_mean'], e['unsafe_picks_std'], 2)} | {_fmt(e['shapings_mean'], e['shapings_std'], 0)} | "
            f"{_fmt(e['refine_seconds_mean'], e['refine_seconds_std'], 1)} | {_fmt(e['train_minutes_mean'], e['train_minutes_std'], 1)} |"
        )
    changed = {k: v for k, v in base.to_dict().items() if v != TrainConfig().get(k)}
    lines += [
        "",
        "Learning curves: `curves.svg` (data in `curves.csv`); one row per run in `runs.csv`.",
        "",
        f"Base settings differing from the defaults: `{json.dumps(changed)}`",
        "",
        "Command:",
        "",
        "```",
        command or "python -m ace_core experiment ablations ...",
        "```",
    ]
    return lines


def _scaled(demand_scale: float) -> str:
    return "" if demand_scale == 1.0 else f", every load and production x{demand_scale:g} (as in training)"


def command_line() -> str:
    return "python -m ace_core " + " ".join(shlex.quote(a) for a in sys.argv[1:])
