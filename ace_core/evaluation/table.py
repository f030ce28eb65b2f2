"""Agents side by side: ``python -m ace_core experiment table --env ENV --agents A,B,... --out DIR``.

Each agent is evaluated with :func:`ace_core.evaluation.runner.evaluate` on the same scenarios, grid seeds,
opponent, demand scale and episode length; its report goes to ``DIR/<slug>/report.json`` (with its EpisodeData),
and an agent whose report is already there is not evaluated again, so an interrupted table resumes
where it stopped. A report made with other settings is refused rather than mixed in.

``--agents`` is a comma-separated list of agent specs (``do-nothing``, ``reconnect``,
``greedy[:...]``, ``sac:RUN[:act=R]``, ``sac-critic:RUN[:K][:act=R]``,
``sac-checked:RUN[:K][:stop=R][:act=R][:expert[=N]][:revert][:critic]``); a piece that does not start with an agent
kind continues the previous spec, so ``greedy:budget=500,lines=1`` stays one agent. Braces expand
to several runs: ``sac:runs/bc-{0,1,2}`` is three agents, one row each, plus one aggregate row
named as written, whose survival is the mean +- std over the runs of each run's mean survival (the
spread over training seeds; each run's own row gives the spread over scenarios and grid seeds).

``DIR/table.csv`` and ``DIR/table.md`` give per row: survival (mean +- std of the fraction of each
episode survived), episodes fully survived (k/n; an episode is ``episode_length`` steps, 288 =
one day), mean episode reward, simulations per step, decisions (steps at max rho >= the agent's
threshold), the share of decisions that changed the grid, decision time p95, attacks seen.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from ace_core.agents.spec import KINDS
from ace_core.errors import ConfigError
from ace_core.evaluation.episodes import play_batches_on_ray, ray_started
from ace_core.evaluation.runner import REPORT_NAME, Evaluation, prepare
from ace_core.grid.demand import check_demand_scale, check_demand_spread
from ace_core.grid.opponents import DEFAULT_OPPONENT, check_opponent
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH
from ace_core.workers import HERE, Workers

COLUMNS = (
    "agent",
    "runs",
    "survival_mean",
    "survival_std",
    "fully_survived",
    "episodes",
    "reward_mean",
    "simulate_calls_per_step",
    "decisions",
    "real_action_share",
    "decision_ms_p95",
    "attacks",
    "cost_per_day",
)
# the settings a report must share with the table to be reused
SETTINGS = (
    "env",
    "split",
    "seeds",
    "nb_episode",
    "opponent",
    "episode_length",
    "demand_scale",
    "demand_spread",
)


@dataclass(frozen=True)
class AgentGroup:
    """One ``--agents`` entry: its spec as written and the specs it expands to."""

    spec: str
    specs: tuple[str, ...]

    @property
    def aggregate(self) -> bool:
        return len(self.specs) > 1


def split_agents(argument: str) -> list[str]:
    """Agent specs from ``--agents``: commas outside braces separate specs, except before a piece
    that does not start with an agent kind (it continues the previous spec's settings)."""
    pieces, depth, current = [], 0, ""
    for char in argument:
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    specs: list[str] = []
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if specs and piece.partition(":")[0] not in KINDS:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    if not specs:
        raise ConfigError(
            f"--agents names no agent; accepted: a comma-separated list of {', '.join(KINDS)} specs"
        )
    return specs


def expand_braces(spec: str) -> tuple[str, ...]:
    """``sac:runs/bc-{0,1,2}`` -> the three specs; several brace groups give every combination."""
    parts = re.split(r"\{([^{}]*)\}", spec)
    choices = [[p] if i % 2 == 0 else [c.strip() for c in p.split(",")] for i, p in enumerate(parts)]
    if any("{" in p or "}" in p for p in parts[::2]) or any("" in c for c in choices[1::2]):
        raise ConfigError(
            f"agent {spec!r} has unbalanced braces or an empty choice; accepted: e.g. sac:runs/bc-{{0,1,2}}"
        )
    return tuple("".join(combo) for combo in itertools.product(*choices))


def agent_groups(argument: str) -> list[AgentGroup]:
    return [AgentGroup(spec, expand_braces(spec)) for spec in split_agents(argument)]


def slug(spec: str) -> str:
    """A folder name for an agent spec (``sac:runs/x`` -> ``sac_runs_x``)."""
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", spec).strip("_") or "agent"


@dataclass(frozen=True)
class TablePlan:
    """A table checked and ready to evaluate (:func:`plan_table`)."""

    groups: list[AgentGroup]
    specs: list[str]
    wanted: dict
    """the settings every report of the table shares (:data:`SETTINGS`)"""
    out: Path
    command: str

    def folder(self, spec: str) -> Path:
        return self.out / slug(spec)


def plan_table(
    env: str,
    agents: str,
    out: Path,
    split: str = "test",
    seeds: tuple[int, ...] = (0,),
    nb_episode: int | None = None,
    opponent: str = DEFAULT_OPPONENT,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    command: str = "",
    demand_scale: float = 1.0,
    demand_spread: float = 0.0,
) -> TablePlan:
    """The table's agents and settings, checked before anything is evaluated."""
    opponent = check_opponent(opponent)
    check_demand_scale(demand_scale)
    check_demand_spread(demand_spread)
    groups = agent_groups(agents)
    specs = list(dict.fromkeys(s for g in groups for s in g.specs))
    folders: dict[str, str] = {}
    for spec in specs:
        if folders.setdefault(slug(spec), spec) != spec:
            raise ConfigError(
                f"agents {folders[slug(spec)]!r} and {spec!r} would share the folder {slug(spec)}"
            )
    wanted = {
        "env": env,
        "split": split,
        "seeds": list(seeds),
        "nb_episode": nb_episode,
        "opponent": opponent,
        "episode_length": episode_length,
        "demand_scale": demand_scale,
        "demand_spread": demand_spread,
    }
    return TablePlan(groups, specs, wanted, Path(out), command)


def run_table(env: str, agents: str, out: Path, *, workers: Workers = HERE, **settings) -> list[dict]:
    """Evaluate every agent (reusing finished reports), then write ``table.csv`` and ``table.md``;
    ``workers`` fans the agents' episodes out to Ray actors. ``settings``:
    :func:`plan_table`'s (split, seeds, nb_episode, opponent, episode_length, command,
    demand_scale, demand_spread)."""
    return run_tables([plan_table(env, agents, out, **settings)], workers)[0]


def run_tables(plans: list[TablePlan], workers: Workers = HERE) -> list[list[dict]]:
    """Several tables' agents evaluated (on Ray: every episode of every table in one queue), then
    each table written; the rows of each."""
    with ray_started(workers):
        reports = _reports(
            [(plan.folder(spec), spec, plan.wanted) for plan in plans for spec in plan.specs], workers
        )
    tables = []
    for plan in plans:
        rows = []
        for group in plan.groups:
            rows += [_row(spec, [reports[plan.folder(spec)]]) for spec in group.specs]
            if group.aggregate:
                rows.append(_row(group.spec, [reports[plan.folder(spec)] for spec in group.specs]))
        _write_csv(plan.out / "table.csv", rows)
        (plan.out / "table.md").write_text("\n".join(_markdown(rows, plan.wanted, plan.command)) + "\n")
        tables.append(rows)
    return tables


Wanted = tuple[Path, str, dict]
"""(report folder, agent spec, the table's settings)"""


def _reports(wanted: list[Wanted], workers: Workers) -> dict[Path, dict]:
    """Each report by its folder: reused from an earlier run of the same table, or evaluated now,
    here one after the other, or on Ray all in one queue (each written as soon as it is complete,
    so an interrupted table resumes from there)."""
    reports = {
        folder: _reusable(folder / REPORT_NAME, spec, settings)  # refused before anything is played
        for folder, spec, settings in wanted
        if (folder / REPORT_NAME).exists()
    }
    missing = [(folder, spec, settings) for folder, spec, settings in wanted if folder not in reports]
    if workers.on_ray:
        _evaluate_on_ray(missing, workers)
    else:
        for folder, spec, settings in missing:
            _prepare(folder, spec, settings, keep_player=True).run_here()
    reports |= {folder: _reusable(folder / REPORT_NAME, spec, settings) for folder, spec, settings in missing}
    return reports


def _evaluate_on_ray(missing: list[Wanted], workers: Workers) -> None:
    """The evaluations' episodes in one queue on Ray; each report written as soon as its
    evaluation is complete. An agent is loaded here once per grid, to refuse a bad spec before
    anything is played."""
    loaded: set[tuple[str, str]] = set()
    evaluations = []
    for folder, spec, settings in missing:
        first = (spec, settings["env"]) not in loaded
        evaluations.append(_prepare(folder, spec, settings, keep_player=False, agent_checked=not first))
        loaded.add((spec, settings["env"]))

    def done(index: int, played: list, seconds: float) -> None:
        evaluations[index].finish(played, seconds)
        print(f"[{time.strftime('%H:%M:%S')}] {evaluations[index].out_dir} done", flush=True)

    if evaluations:
        play_batches_on_ray([(e.settings, e.jobs) for e in evaluations], True, workers, done)


def _prepare(
    folder: Path, spec: str, settings: dict, keep_player: bool, agent_checked: bool = False
) -> Evaluation:
    print(f"[{time.strftime('%H:%M:%S')}] evaluating {spec} -> {folder}", flush=True)
    return prepare(
        settings["env"],
        spec,
        settings["split"],
        settings["nb_episode"],
        folder,
        seeds=tuple(settings["seeds"]),
        opponent=settings["opponent"],
        episode_length=settings["episode_length"],
        demand_scale=settings["demand_scale"],
        demand_spread=settings["demand_spread"],
        keep_player=keep_player,
        agent_checked=agent_checked,
    )


def _reusable(path: Path, spec: str, wanted: dict) -> dict:
    """The report at ``path``, refused when it was made for another agent or other settings
    (reports written before a setting existed hold its default)."""
    report = json.loads(path.read_text())
    defaults = {
        "opponent": DEFAULT_OPPONENT,
        "episode_length": DEFAULT_EPISODE_LENGTH,
        "nb_episode": None,
        "demand_scale": 1.0,
        "demand_spread": 0.0,
    }
    made = {key: report.get(key, defaults.get(key)) for key in SETTINGS}
    if report.get("agent") != spec or made != wanted:
        raise ConfigError(
            f"{path} was made with other settings ({report.get('agent')!r}, {made}) than this table "
            f"({spec!r}, {wanted}); choose another --out or remove that folder"
        )
    return report


def _row(name: str, reports: list[dict]) -> dict:
    """One table row: an agent's report, or the mean over several runs' reports."""
    episodes = [e for r in reports for e in r["episodes"]]
    if len(reports) == 1:
        survival_mean, survival_std = reports[0]["survival_mean"], reports[0]["survival_std"]
    else:  # the spread over runs (training seeds) of each run's mean survival
        means = [r["survival_mean"] for r in reports]
        survival_mean, survival_std = statistics.mean(means), statistics.stdev(means)
    return {
        "agent": name,
        "runs": len(reports),
        "survival_mean": survival_mean,
        "survival_std": survival_std,
        "fully_survived": sum(e["steps_survived"] >= e["max_steps"] for e in episodes),
        "episodes": len(episodes),
        "reward_mean": statistics.mean(r["reward_mean"] for r in reports),
        "simulate_calls_per_step": statistics.mean(r["simulate_calls_per_step"] for r in reports),
        "decisions": statistics.mean(r["decisions"] for r in reports),
        "real_action_share": statistics.mean(r["real_action_share"] for r in reports),
        "decision_ms_p95": statistics.mean(r["decision_ms_p95"] for r in reports),
        "attacks": statistics.mean(r.get("attacks", 0) for r in reports),
        "cost_per_day": statistics.mean(r.get("cost_per_day", 0.0) for r in reports),
    }


def _write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows)


def _spread(spread: float) -> str:
    return f", each load's share drawn per grid seed (spread {spread:g})" if spread else ""


def _markdown(rows: list[dict], wanted: dict, command: str) -> list[str]:
    episodes = f"the first {wanted['nb_episode']}" if wanted["nb_episode"] else "all"
    lines = [
        f"# Agents on {wanted['env']}",
        "",
        f"{episodes} {wanted['split']} scenarios of {wanted['episode_length']} steps "
        f"({wanted['episode_length'] / 288:g} day(s)), grid seeds {wanted['seeds']}, opponent "
        f"`{wanted['opponent']}`, demand x{wanted['demand_scale']:g}{_spread(wanted['demand_spread'])}. Survival: mean +- std of the fraction of each episode survived; for "
        "a row over several runs, mean +- std over the runs of each run's mean. Decisions and "
        "attacks: per run. Cost: redispatch, curtailment and storage in force, euros per day played "
        "(prices in `ace_core/grid/flex/moves.py`).",
        "",
        "| agent | survival | fully survived | reward | sims / step | decisions | real action share "
        "| decision ms p95 | attacks | cost / day |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['agent']} | {r['survival_mean']:.3f} +- {r['survival_std']:.3f} | "
            f"{r['fully_survived']}/{r['episodes']} | {r['reward_mean']:.1f} | "
            f"{r['simulate_calls_per_step']:.1f} | {r['decisions']:.0f} | {r['real_action_share']:.2f} | "
            f"{r['decision_ms_p95']:.1f} | {r['attacks']:.0f} | {r['cost_per_day']:,.0f} EUR |"
        )
    lines += ["", "Command:", "", "```", command or "python -m ace_core experiment table ...", "```"]
    return lines
