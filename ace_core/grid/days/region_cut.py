"""A region's week from a week of the whole grid: the cut L2RPN made its 36-bus days with.

The 36-substation envs (``l2rpn_neurips_2020_track1``) are the region of the IEEE 118-bus grid
around buses 32-68. Their eight lines to the rest of the grid are replaced by loads named
``interco_<a>_<b>``, which draw what the line carried out of the region. Given a week generated
on the whole grid (:mod:`ace_core.grid.days.case118_source`), :func:`cut_week`:

1. runs the whole grid's AC power flow at every step (LightSim2Grid, through grid2op's
   ``FromNPY`` chronics), for the real series and again for their forecasts (forecast rows that
   put a generator above its Pmax mended first: :mod:`ace_core.grid.days.forecast_mend`);
2. keeps the region's own loads, its generators' AC set-points (the whole grid's slack is one of
   them) and, for each interco load, the active and reactive flow out of the region at the
   line's inner end;
3. plays the region with those series and checks that every one of its lines carries the flow it
   carried in the whole grid (within :data:`MAX_FLOW_GAP_MW`), so a week whose cut does not
   reproduce the whole grid is refused rather than kept;
4. gives the week the region env's own planned-maintenance model where its chronics carry one
   (``maintenance_meta.json``: grid2op draws the outages when it loads the week).

Elements are matched by name: the NeurIPS env's names are those of the whole grid. An env of the
same region under other names (``l2rpn_wcci_2020``: its buses numbered 0-35 where the whole
grid's are 32-66 and 68) is matched through it, element by element (:func:`whole_grid_names`).
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ace_core.errors import ConfigError
from ace_core.grid.days.forecast_mend import mend_forecasts
from ace_core.grid.envs import bundled_env_dir

MAX_FLOW_GAP_MW = 1.0
INTERCO = "interco_"


@dataclass(frozen=True)
class Elements:
    """An env's loads, generators and lines, in its own order."""

    loads: list[str]
    gens: list[str]
    lines: list[str]

    @property
    def buses(self) -> set[int]:
        return {bus for line in self.lines for bus in _buses(line)}


@dataclass(frozen=True)
class Flows:
    """The AC solution at every step: generators' output and each line's p and q at both ends
    (frames with the elements' names as columns)."""

    gen_p: pd.DataFrame
    line: dict[str, pd.DataFrame]  # p_or, q_or, p_ex, q_ex


def _buses(line_name: str) -> tuple[int, int]:
    """A line's two buses, from grid2op's ``<origin>_<extremity>_<id>`` name."""
    origin, extremity, _ = line_name.split("_")
    return int(origin), int(extremity)


def _bus(injection_name: str) -> int:
    """A load's or generator's bus, from grid2op's ``<kind>_<bus>_<id>`` name."""
    return int(injection_name.split("_")[1])


def whole_grid_names(region: Elements, named: Elements) -> dict[str, str]:
    """``region``'s element names -> the whole grid's, through ``named``, the same region under
    the whole grid's names: elements are paired in order, and refused unless every pair sits on
    the same bus, the buses of both paired in their order (an interco load on its line's inner
    bus; a line on the same two buses, named in either order: three transformers are named from
    one end in one env and from the other end in the other, their flows the same at origin)."""
    kinds = ("loads", "gens", "lines")
    if any(len(getattr(region, k)) != len(getattr(named, k)) for k in kinds) or len(region.buses) != len(
        named.buses
    ):
        sizes = [f"{len(getattr(e, k))} {k}" for e in (region, named) for k in (*kinds, "buses")]
        raise ConfigError(f"not the same region: {', '.join(sizes[:4])} against {', '.join(sizes[4:])}")
    bus = dict(zip(sorted(region.buses), sorted(named.buses)))

    def sits(ours: str, theirs: str) -> bool:
        if theirs.startswith(INTERCO):
            a, b = (int(x) for x in theirs[len(INTERCO) :].split("_"))
            return bus.get(_bus(ours)) == (a if a in named.buses else b)
        return bus.get(_bus(ours)) == _bus(theirs)

    for ours, theirs in zip(region.loads + region.gens, named.loads + named.gens):
        if not sits(ours, theirs):
            raise ConfigError(f"not the same region: {ours} does not sit where {theirs} does")
    for ours, theirs in zip(region.lines, named.lines):
        if {bus[x] for x in _buses(ours)} != set(_buses(theirs)):
            raise ConfigError(f"not the same region: line {ours} does not join what {theirs} joins")
    return dict(zip(region.loads + region.gens + region.lines, named.loads + named.gens + named.lines))


def _make(env_dir: Path, **kwargs):
    import grid2op
    from lightsim2grid import LightSimBackend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid2op.make(str(env_dir), backend=LightSimBackend(), **kwargs)


def elements(env_dir: Path) -> Elements:
    env = _make(env_dir)
    try:
        return Elements(*([str(n) for n in names] for names in (env.name_load, env.name_gen, env.name_line)))
    finally:
        env.close()


def ac_flows(
    env_dir: Path, load_p: pd.DataFrame, load_q: pd.DataFrame, prod_p: pd.DataFrame, prod_v: pd.DataFrame
) -> Flows:
    """Every step's AC power flow of ``env_dir``'s grid with these injections (columns in the
    env's order) and nothing else acting: no overflow disconnection, no opponent."""
    from grid2op.Chronics import FromNPY
    from grid2op.Parameters import Parameters

    params = Parameters()
    params.NO_OVERFLOW_DISCONNECTION = True
    series = {"load_p": load_p, "load_q": load_q, "prod_p": prod_p, "prod_v": prod_v}
    env = _make(
        env_dir,
        param=params,
        chronics_class=FromNPY,
        data_feeding_kwargs={k: v.to_numpy(dtype=float) for k, v in series.items()},
        opponent_init_budget=0.0,
        opponent_budget_per_ts=0.0,
    )
    try:
        steps = len(load_p)
        gen_p = np.empty((steps, env.n_gen))
        line = {key: np.empty((steps, env.n_line)) for key in ("p_or", "q_or", "p_ex", "q_ex")}
        obs = env.reset()
        for t in range(steps):
            if t:
                obs, _, done, info = env.step(env.action_space())
                if done:
                    raise ConfigError(
                        f"the AC power flow of {env_dir.name} fails at step {t}: {info['exception']}"
                    )
            gen_p[t] = obs.gen_p
            for key, values in line.items():
                values[t] = getattr(obs, key)
        return Flows(
            pd.DataFrame(gen_p, columns=list(env.name_gen)),
            {key: pd.DataFrame(values, columns=list(env.name_line)) for key, values in line.items()},
        )
    finally:
        env.close()


def _first_bundled_chronic(region_env: str) -> Path:
    return sorted(p for p in (bundled_env_dir(region_env) / "chronics").iterdir() if p.is_dir())[0]


def region_voltages(region_env: str) -> pd.Series:
    """The region's generator voltage set-points (kV): the first row of its first bundled chronic."""
    return pd.read_csv(_first_bundled_chronic(region_env) / "prod_v.csv.bz2", sep=";", nrows=1).iloc[0]


def boundary_line(interco: str, whole: Elements, region_buses: set[int]) -> tuple[str, str]:
    """The whole grid's line that ``interco_<a>_<b>`` stands for, and its end inside the region
    (``or`` or ``ex``)."""
    a, b = (int(x) for x in interco[len(INTERCO) :].split("_"))
    for line in whole.lines:
        if set(_buses(line)) == {a, b} and (a in region_buses) != (b in region_buses):
            inner = a if a in region_buses else b
            return line, "or" if _buses(line)[0] == inner else "ex"
    raise ConfigError(f"{interco}: no line of the whole grid joins the region to bus {a} or {b}")


def _region_series(whole_dir: Path, whole: Elements, region: Elements, series: dict, voltages: pd.DataFrame):
    """The region's load_p, load_q and prod_p for the whole grid's ``series``, and the flows
    (p_or) the whole grid carries on the region's lines."""
    flows = ac_flows(whole_dir, series["load_p"], series["load_q"], series["prod_p"], voltages)
    load_p, load_q = {}, {}
    for name in region.loads:
        if name.startswith(INTERCO):  # what leaves the region through the line, at its inner end
            line, end = boundary_line(name, whole, region.buses)
            load_p[name], load_q[name] = flows.line[f"p_{end}"][line], flows.line[f"q_{end}"][line]
        else:
            load_p[name], load_q[name] = series["load_p"][name], series["load_q"][name]
    return (
        pd.DataFrame(load_p).reset_index(drop=True).round(2),
        pd.DataFrame(load_q).reset_index(drop=True).round(2),
        flows.gen_p[region.gens].round(2),  # AC set-points: the whole grid's slack is in the region
        flows.line["p_or"][region.lines],
    )


def _read_week(week_dir: Path, whole: Elements, suffix: str) -> dict[str, pd.DataFrame]:
    return {
        "load_p": pd.read_csv(week_dir / f"load_p{suffix}.csv.bz2", sep=";")[whole.loads],
        "load_q": pd.read_csv(week_dir / f"load_q{suffix}.csv.bz2", sep=";")[whole.loads],
        "prod_p": pd.read_csv(week_dir / f"prod_p{suffix}.csv.bz2", sep=";")[whole.gens],
    }


def cut_week(
    whole_dir: Path,
    week_dir: Path,
    region_env: str,
    region_dir: Path,
    out_dir: Path,
    names: dict[str, str] | None = None,
) -> dict:
    """Write the region's version of the whole grid's week ``week_dir`` into ``out_dir``.

    ``names`` gives the region env's element names in the whole grid where they differ
    (:func:`whole_grid_names`). Returns the largest gap (MW) between a region line's flow and
    the whole grid's, and how many forecast rows were mended (:mod:`~ace_core.grid.days.forecast_mend`); refuses
    the week (:class:`ConfigError`) when the gap is over :data:`MAX_FLOW_GAP_MW` or the whole
    grid's power flow fails."""
    whole, own = elements(whole_dir), elements(region_dir)
    names = names or {}
    region = Elements(*([names.get(n, n) for n in kind] for kind in (own.loads, own.gens, own.lines)))
    to_own = {names.get(n, n): n for n in own.loads + own.gens + own.lines}
    missing = [n for n in region.loads if not n.startswith(INTERCO) and n not in whole.loads]
    missing += [n for n in region.gens if n not in whole.gens]
    if missing:
        raise ConfigError(f"{region_env} is not a region of {whole_dir.name}: no {', '.join(missing[:3])}")
    charac = pd.read_csv(whole_dir / "prods_charac.csv").set_index("name").loc[whole.gens]
    real = _read_week(week_dir, whole, "")
    forecasts = _read_week(week_dir, whole, "_forecasted")
    mended = mend_forecasts(forecasts, real, charac["Pmax"])
    out_dir.mkdir(parents=True)

    def write(suffix: str, series: dict):
        voltages = pd.DataFrame([charac["V"].to_numpy()] * len(series["load_p"]), columns=whole.gens)
        *injections, inner_flows = _region_series(whole_dir, whole, region, series, voltages)
        injections = [frame.rename(columns=to_own) for frame in injections]
        for name, frame in zip(("load_p", "load_q", "prod_p"), injections):
            frame.to_csv(out_dir / f"{name}{suffix}.csv.bz2", sep=";", index=False)
        return (*injections, inner_flows.rename(columns=to_own))

    write("_forecasted", forecasts)
    load_p, load_q, prod_p, inner_flows = write("", real)  # played again below
    prod_v = pd.DataFrame([region_voltages(region_env)[own.gens].to_numpy()] * len(load_p), columns=own.gens)
    prod_v.to_csv(out_dir / "prod_v.csv.bz2", sep=";", index=False)
    for info in ("start_datetime.info", "time_interval.info"):
        shutil.copy(week_dir / info, out_dir / info)
    maintenance = _first_bundled_chronic(region_env) / "maintenance_meta.json"
    if maintenance.is_file():
        shutil.copy(maintenance, out_dir / maintenance.name)

    played = ac_flows(region_dir, load_p, load_q, prod_p, prod_v).line["p_or"][own.lines]
    gap = (played - inner_flows).abs().to_numpy()
    if gap.max() > MAX_FLOW_GAP_MW:
        step, line = np.unravel_index(gap.argmax(), gap.shape)
        raise ConfigError(
            f"the cut of {week_dir.name} does not carry the whole grid's flows: line {own.lines[line]} "
            f"differs by {gap.max():.1f} MW at step {step}"
        )
    return {"flow_gap_mw": round(float(gap.max()), 3), "forecast_rows_mended": mended}
