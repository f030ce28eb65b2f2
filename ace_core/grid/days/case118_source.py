"""The whole 118-bus grid of the 2020 L2RPN data, ready for chronix2grid to generate weeks on.

The 36-substation grids (``l2rpn_neurips_2020_track1``, ``l2rpn_wcci_2020``) ship no generator
inputs: they are a region of the whole IEEE 118-bus grid, whose lines to the rest of it are
loads (:mod:`ace_core.grid.days.region_cut`). chronix2grid ships the inputs of that whole grid as its
example case ``case118_l2rpn_neurips_1x``: the grid, and the characteristics of its 99 loads
and 62 generators, which match the NeurIPS env's (every region generator's Pmax exactly, the
region loads' Pmax within about 1 % of the bundled chronics' February mean). The WCCI 2020 env
is the same region with the same generators and every load lower: its bundled April chronic's
loads are 0.75 of the case's (0.734 to 0.762 over its 29 own loads, the case's seasonal pattern
for those days taken out), so its source is the case with every load's Pmax at
:data:`WCCI_2020_LOAD_SCALE`. :class:`WholeGridSource` lays a case out as a grid2op env folder
that today's generator (``chronix2grid.grid2op_utils``, the one :mod:`ace_core.grid.days.chronix_week`
runs) accepts:

- the case's grid, loads (scaled) and generators; the region's generators at the voltage
  set-points of the region env's own chronics, so that the cut region carries the whole grid's
  flows;
- the case's load, renewables and dispatch parameters, completed with the keys today's
  generator also reads (the values of ``l2rpn_idf_2023``, the bundled env made by it), its
  reactive loads at 0.7 of the active ones (the 36-bus chronics' ratio), forecasts 5 minutes
  ahead (what the 36-bus envs read), no planned maintenance on the whole grid (the region's,
  where its env has a model of it, comes with the cut) and the weekly load pattern aligned as
  the 2020 generator had it (``day_lag`` 0);
- the 52 weeks of 2012, the year of the bundled 36-bus chronics.

The folder is written beside and renamed, so it is whole or absent.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from ace_core.errors import ConfigError
from ace_core.grid.days.region_cut import elements, region_voltages, whole_grid_names
from ace_core.grid.envs import bundled_env_dir

CASE = "case118_l2rpn_neurips_1x"
WCCI_2020_LOAD_SCALE = 0.75
FIRST_WEEK = datetime.date(2012, 1, 2)  # a Monday
LOAD_Q_OVER_P = 0.7
# the bundled env whose parameter files fill the keys the 2020 case predates
_GENERATOR_OF_TODAY = "l2rpn_idf_2023"
_CONFIG = '''"""The whole NeurIPS 2020 118-bus grid: a source of generated days, not an env to play."""
from grid2op.Action import TopologyAndDispatchAction
from grid2op.Backend import PandaPowerBackend
from grid2op.Chronics import ChangeNothing, GridStateFromFileWithForecasts
from grid2op.Reward import RedispReward
from grid2op.Rules import DefaultRules

config = {
    "backend": PandaPowerBackend,
    "action_class": TopologyAndDispatchAction,
    "observation_class": None,
    "reward_class": RedispReward,
    "gamerules_class": DefaultRules,
    "chronics_class": ChangeNothing,
    "grid_value_class": GridStateFromFileWithForecasts,
    "volagecontroler_class": None,
    "thermal_limits": None,
    "names_chronics_to_grid": None,
}
'''


def chronix2grid_case_dir(python: Path) -> Path:
    """The case's folder inside the chronix2grid package of the days interpreter ``python``."""
    done = subprocess.run(
        [str(python), "-I", "-c", "import chronix2grid, os; print(os.path.dirname(chronix2grid.__file__))"],
        capture_output=True,
        text=True,
        check=False,
    )
    case = Path(done.stdout.strip()) / "getting_started" / "example" / "input" / "generation" / CASE
    if done.returncode != 0 or not (case / "prods_charac.csv").is_file():
        raise ConfigError(
            f"the days interpreter {python} has no chronix2grid with its {CASE} example; run `make days-venv`"
        )
    return case


@dataclass(frozen=True)
class WholeGridSource:
    """The whole grid whose weeks are cut to ``region_env``: chronix2grid's case with every
    load's Pmax times ``load_scale``, laid out once as ``<root>/<name>``. ``named_like`` is the
    env of the same region under the whole grid's names, where ``region_env``'s differ."""

    name: str
    region_env: str
    load_scale: float = 1.0
    named_like: str | None = None

    @cached_property
    def names(self) -> dict[str, str]:
        """The region env's element names -> the whole grid's (empty where they are the same)."""
        if self.named_like is None:
            return {}
        return whole_grid_names(
            elements(bundled_env_dir(self.region_env)), elements(bundled_env_dir(self.named_like))
        )

    def prepare(self, root: Path, python: Path) -> Path:
        """``root/name``: the whole grid's generator inputs (made once)."""
        target = root / self.name
        if (target / "scenario_params.json").is_file():
            return target
        case = chronix2grid_case_dir(python)
        partial = root / f".{self.name}.making-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        (partial / "chronics").mkdir(parents=True)
        self._lay_out(case, partial)
        try:
            os.replace(partial, target)
        except OSError:  # another run made it first
            shutil.rmtree(partial, ignore_errors=True)
        return target

    def _lay_out(self, case: Path, folder: Path) -> None:
        today = bundled_env_dir(_GENERATOR_OF_TODAY)
        for name in ("grid.json", "grid_layout.json", "params.json"):
            shutil.copy(case / name, folder / name)
        (folder / "config.py").write_text(_CONFIG, encoding="utf-8")
        loads = pd.read_csv(case / "loads_charac.csv")
        loads["Pmax"] = (loads["Pmax"] * self.load_scale).round(2)
        loads.to_csv(folder / "loads_charac.csv", index=False)

        prods = pd.read_csv(case / "prods_charac.csv")
        voltages = region_voltages(self.region_env).rename(index=self.names)
        in_region = prods["name"].isin(voltages.index)
        prods.loc[in_region, "V"] = prods.loc[in_region, "name"].map(voltages)
        prods.to_csv(folder / "prods_charac.csv", index=False)

        def read(source: Path, name: str) -> dict:
            with open(source / name, encoding="utf-8") as f:
                return json.load(f)

        def write(name: str, params: dict) -> None:
            with open(folder / name, "w", encoding="utf-8") as f:
                json.dump(params, f, indent=1)

        write("params_load.json", {**read(case, "params_load.json"), "load_q_from_p_coeff": LOAD_Q_OVER_P})
        write("params_res.json", {**read(today, "params_res.json"), **read(case, "params_res.json")})
        opf = read(case, "params_opf.json")
        write("params_opf.json", {**read(today, "params_opf.json"), "losses_pct": float(opf["losses_pct"])})
        forecasts = read(today, "params_forecasts.json")
        write("params_forecasts.json", {k: v[:1] if isinstance(v, list) else v for k, v in forecasts.items()})
        weeks = [str(FIRST_WEEK + datetime.timedelta(days=7 * i)) for i in range(52)]
        write("scenario_params.json", {"dt": str(read(case, "params.json")["dt"]), "all_dates": weeks})
        write("chronix2grid_adddata_kwargs.json", {"with_loss": True, "day_lag": 0})
        write(
            "maintenance_meta.json",
            {
                "maintenance_starting_hour": 9,
                "maintenance_ending_hour": 17,
                "line_to_maintenance": [],
                "daily_proba_per_month_maintenance": [0.0] * 12,
                "max_daily_number_per_month_maintenance": [0] * 12,
            },
        )


# the envs whose weeks are cut out of the whole grid, and the whole grid each is cut from
SOURCES = {
    source.region_env: source
    for source in (
        WholeGridSource("case118_neurips_2020", "l2rpn_neurips_2020_track1"),
        WholeGridSource(
            "case118_wcci_2020",
            "l2rpn_wcci_2020",
            WCCI_2020_LOAD_SCALE,
            named_like="l2rpn_neurips_2020_track1",
        ),
    )
}
