"""The stress table: ``python -m ace_core experiment stress --env ENV --agents A,B,... --out DIR``.

The same agents on the same scenarios under several kinds of stress, one row each:

- ``ordinary``: the days as they are, the env's own opponent;
- ``heavier-1.05``, ``heavier-1.10``, ``heavier-1.15``: every load and production multiplied
  (:mod:`ace_core.grid.demand`);
- ``uneven-1.05``, ``uneven-1.10``, ``uneven-1.15``: the same totals, each load's share drawn
  per grid seed (spread 0.05: :func:`ace_core.grid.demand.spread_loads`), so that every grid seed
  plays another day where the heavier rows play the same one; asked for by name, not played by
  default;
- ``attacks-daily``: ``random-line``, one 4-hour line attack a day;
- ``attacks-4h``: ``storm``, a 2-hour attack every 4 hours;
- ``attacks-2h``: ``storm:cooldown=24``, one every 2 hours.

Each row is a table of its own (:mod:`ace_core.evaluation.table`, ``DIR/<row>/``, with the
reports of every agent, so an interrupted table resumes where it stopped); with Ray workers every
row's episodes go to the workers as one queue. ``DIR/stress.md`` and
``DIR/stress.csv`` give, per row and agent, survival (mean +- std) and simulations per step.

Rows whose attacks the grid has no attacked lines for are left out of the default set (and named
in ``stress.md``); asking for one by name is an error. Choose settings on ``--split validation``
and report them on ``--split test``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ace_core.errors import ConfigError
from ace_core.grid.demand import UNEVEN_SPREAD
from ace_core.grid.opponents import ATTACKED_LINES
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH
from ace_core.workers import HERE, Workers


@dataclass(frozen=True)
class StressRow:
    name: str
    opponent: str
    demand_scale: float
    title: str
    demand_spread: float = 0.0
    by_default: bool = True

    @property
    def attacks(self) -> bool:
        return self.opponent not in ("env", "none")


ROWS = (
    StressRow("ordinary", "env", 1.0, "the days as they are"),
    StressRow("heavier-1.05", "env", 1.05, "loads and production x1.05"),
    StressRow("heavier-1.10", "env", 1.10, "loads and production x1.10"),
    StressRow("heavier-1.15", "env", 1.15, "loads and production x1.15"),
    StressRow("uneven-1.05", "env", 1.05, "x1.05, loads' shares drawn per grid seed", UNEVEN_SPREAD, False),
    StressRow("uneven-1.10", "env", 1.10, "x1.10, loads' shares drawn per grid seed", UNEVEN_SPREAD, False),
    StressRow("uneven-1.15", "env", 1.15, "x1.15, loads' shares drawn per grid seed", UNEVEN_SPREAD, False),
    StressRow("attacks-daily", "random-line", 1.0, "a 4-hour line attack a day"),
    StressRow("attacks-4h", "storm", 1.0, "a 2-hour line attack every 4 hours"),
    StressRow("attacks-2h", "storm:cooldown=24", 1.0, "a 2-hour line attack every 2 hours"),
)
ROW_NAMES = tuple(row.name for row in ROWS)


def stress_rows(env: str, names: str = "") -> tuple[list[StressRow], list[StressRow]]:
    """The rows to play on ``env`` (``names``: comma-separated, default all the default rows it can
    play) and the default rows it cannot play."""
    by_name = {row.name: row for row in ROWS}
    playable = [row for row in ROWS if not row.attacks or env in ATTACKED_LINES]
    if not names:
        defaults = [row for row in ROWS if row.by_default]
        return [row for row in defaults if row in playable], [row for row in defaults if row not in playable]
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in by_name]
    if unknown or not chosen:
        raise ConfigError(f"unknown stress row(s) {unknown or names!r}; accepted: {', '.join(ROW_NAMES)}")
    refused = [n for n in chosen if by_name[n] not in playable]
    if refused:
        raise ConfigError(
            f"env {env!r} cannot play stress row(s) {', '.join(refused)}: it has no list of attacked "
            f"lines; accepted for it: {', '.join(r.name for r in playable)}"
        )
    return [by_name[n] for n in dict.fromkeys(chosen)], []


def run_stress(
    env: str,
    agents: str,
    out: Path,
    *,
    rows: str = "",
    split: str = "test",
    seeds: tuple[int, ...] = (0,),
    nb_episode: int | None = None,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    command: str = "",
    workers: Workers = HERE,
) -> list[dict]:
    """Every agent on every row; writes ``stress.csv`` and ``stress.md`` and returns the cells."""
    # here, not at the top: the CLI's parser reads ROW_NAMES without loading grid2op or torch
    from ace_core.evaluation.table import plan_table, run_tables

    played, skipped = stress_rows(env, rows)
    out = Path(out)
    plans = [
        plan_table(
            env,
            agents,
            out / row.name,
            split,
            seeds,
            nb_episode,
            row.opponent,
            episode_length,
            command,
            demand_scale=row.demand_scale,
            demand_spread=row.demand_spread,
        )
        for row in played
    ]
    tables = run_tables(plans, workers)  # on Ray, every row's episodes in one queue
    cells = [{"row": row.name, **cell} for row, table in zip(played, tables) for cell in table]
    _write_csv(out / "stress.csv", cells)
    settings = {"env": env, "split": split, "seeds": list(seeds), "nb_episode": nb_episode}
    lines = _markdown(played, skipped, cells, settings | {"episode_length": episode_length}, command)
    (out / "stress.md").write_text("\n".join(lines) + "\n")
    return cells


def _write_csv(path: Path, cells: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        fields = ["row", *(key for key in (cells[0] if cells else {}) if key != "row")]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(cells)


def _markdown(
    played: list[StressRow], skipped: list[StressRow], cells: list[dict], settings: dict, command: str
) -> list[str]:
    agents = list(dict.fromkeys(cell["agent"] for cell in cells))
    episodes = f"the first {settings['nb_episode']}" if settings["nb_episode"] else "all"
    lines = [
        f"# Stress table on {settings['env']}",
        "",
        f"{episodes} {settings['split']} scenarios of {settings['episode_length']} steps, grid seeds "
        f"{settings['seeds']}. Each cell: survival (mean +- std of the fraction of each episode "
        "survived; over runs for a row over several runs), simulations per step and, where the "
        "agent redispatches, curtails or uses storage, that cost in euros per day played.",
        "",
        "| stress | " + " | ".join(agents) + " |",
        "|---|" + "---|" * len(agents),
    ]
    for row in played:
        by_agent = {cell["agent"]: cell for cell in cells if cell["row"] == row.name}
        shown = [
            f"{c['survival_mean']:.3f} +- {c['survival_std']:.3f} ({c['simulate_calls_per_step']:.1f} sims"
            + (f", {c['cost_per_day']:,.0f} EUR/day)" if c.get("cost_per_day") else ")")
            for c in (by_agent[a] for a in agents)
        ]
        lines.append(f"| {row.name}: {row.title} | " + " | ".join(shown) + " |")
    if skipped:
        lines += ["", f"Not played (no attacked lines on this grid): {', '.join(r.name for r in skipped)}."]
    lines += ["", "Command:", "", "```", command or "python -m ace_core experiment stress ...", "```"]
    return lines
