"""Forecasts over a look-ahead horizon: which kind an env carries, and how to give it one.

grid2op observations carry forecasts of the injections (loads, generation, voltages set-points,
maintenance) at a few horizons; ``obs.simulate(action, time_step=k)`` and
``obs.get_forecast_env()`` use them. The datasets differ: l2rpn_idf_2023 ships 12 horizons
(one hour at 5 minutes a step), but the 2020 grids and l2rpn_case14_sandbox ship one (5 minutes).

For those, :func:`make_env_with_forecasts` builds the horizon from the env's own chronics with
grid2op's forecast handlers (``grid2op.Chronics.handlers``), and :func:`forecast_kind` says which
kind an env carries, so that the console never presents one kind as another:

- ``dataset``: the forecast files shipped with the dataset (real forecasts, with their errors);
- ``perfect``: the chronics' own future values (``PerfectForecastHandler``): an oracle, the best
  case of any forecast, useful to screen actions but optimistic;
- ``noisy``: the future values with noise growing with the horizon (``NoisyForecastHandler``);
- ``persistence``: the current injections repeated (``PersistenceForecastHandler``): no
  forecast at all, only "if nothing changes".
"""

from __future__ import annotations

from dataclasses import dataclass

from ace_core.errors import ConfigError

STEP_MINUTES = 5
DEFAULT_HORIZON = 12
FORECAST_KINDS = ("perfect", "noisy", "persistence")

KIND_WORDS = {
    "dataset": "the dataset's forecast files",
    "perfect": "perfect forecast (the chronics' future values, an oracle)",
    "noisy": "noisy forecast (the chronics' future values with noise growing with the horizon)",
    "persistence": "persistence (today's injections repeated: not a forecast)",
    "none": "no forecasts",
}


class ForecastError(ConfigError):
    """A horizon the env's forecasts cannot give, or an unknown forecast kind."""


@dataclass(frozen=True)
class ForecastInfo:
    kind: str
    """one of ``dataset``, ``perfect``, ``noisy``, ``persistence``, ``none``"""
    horizon: int
    """how many steps ahead the observations carry forecasts for"""

    @property
    def description(self) -> str:
        return KIND_WORDS[self.kind]

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "description": self.description,
            "horizon_steps": self.horizon,
            "horizon_minutes": self.horizon * STEP_MINUTES,
        }


def available_horizon(obs) -> int:
    """Steps ahead this observation carries forecasts for (0: none)."""
    forecasts = getattr(obs, "_forecasted_inj", None) or []
    return max(len(forecasts) - 1, 0)


def forecast_kind(env) -> str:
    """The kind of forecast the env's observations carry (see the module docstring)."""
    data = env.chronics_handler.real_data
    data = getattr(data, "data", None) or data  # MultifolderWithCache / Multifolder wrap one
    handler = getattr(data, "load_p_for_handler", None)
    if handler is None:
        return "dataset" if _env_has_forecasts(env) else "none"
    from grid2op.Chronics.handlers import (
        NoisyForecastHandler,
        PerfectForecastHandler,
        PersistenceForecastHandler,
    )

    if isinstance(handler, NoisyForecastHandler):  # a PerfectForecastHandler subclass: test first
        return "noisy"
    if isinstance(handler, PerfectForecastHandler):
        return "perfect"
    if isinstance(handler, PersistenceForecastHandler):
        return "persistence"
    return "dataset"


def _env_has_forecasts(env) -> bool:
    try:
        return len(env.chronics_handler.forecasts()) > 0
    except Exception:  # noqa: BLE001 - grid2op raises various errors for envs without forecasts
        return False


def forecast_info(env, obs) -> ForecastInfo:
    horizon = available_horizon(obs)
    return ForecastInfo(forecast_kind(env) if horizon else "none", horizon)


def check_horizon(horizon: int, available: int) -> int:
    """``horizon`` if the forecasts reach it; a clear error otherwise."""
    if not isinstance(horizon, int) or isinstance(horizon, bool) or horizon <= 0:
        raise ForecastError(f"look-ahead horizon {horizon!r} must be a positive number of steps, e.g. 12")
    if horizon > available:
        raise ForecastError(
            f"look-ahead horizon {horizon} steps is beyond the {available} step(s) of forecasts this "
            f"env carries; accepted: 1 to {available}, or make the env with "
            "ace_core.grid.forecasts.make_env_with_forecasts(name, kind, horizon)"
        )
    return horizon


def forecast_handlers(kind: str, horizon: int) -> dict:
    """``data_feeding_kwargs`` for ``grid2op.make``: the env's chronics read as they are, and
    forecasts of ``kind`` at 5, 10, ... ``5 * horizon`` minutes."""
    from grid2op.Chronics import FromHandlers
    from grid2op.Chronics.handlers import (
        CSVHandler,
        NoisyForecastHandler,
        PerfectForecastHandler,
        PersistenceForecastHandler,
    )

    if kind not in FORECAST_KINDS:
        raise ForecastError(f"unknown forecast kind {kind!r}; accepted: {', '.join(FORECAST_KINDS)}")
    if not isinstance(horizon, int) or horizon <= 0:
        raise ForecastError(f"forecast horizon {horizon!r} must be a positive number of steps, e.g. 12")
    handler = {"perfect": PerfectForecastHandler, "noisy": NoisyForecastHandler}.get(kind)

    def for_handler(array: str):
        # persistence repeats the current values; the two others look at the chronics' future
        return PersistenceForecastHandler(array) if handler is None else handler(array, quiet_warnings=True)

    kwargs = {
        "gridvalueClass": FromHandlers,
        "load_p_handler": CSVHandler("load_p"),
        "load_q_handler": CSVHandler("load_q"),
        "gen_p_handler": CSVHandler("prod_p"),
        "gen_v_handler": CSVHandler("prod_v"),
        "load_p_for_handler": for_handler("load_p_forecasted"),
        "load_q_for_handler": for_handler("load_q_forecasted"),
        "gen_p_for_handler": for_handler("prod_p_forecasted"),
        "gen_v_for_handler": for_handler("prod_v_forecasted"),
        "h_forecast": tuple(STEP_MINUTES * (i + 1) for i in range(horizon)),
    }
    if handler is None:
        # grid2op's persistence cannot repeat voltage set-points (the env's are not in its
        # injections): the simulator keeps the current ones, which is persistence too
        del kwargs["gen_v_for_handler"]
    return kwargs


def make_env_with_forecasts(name: str, kind: str = "perfect", horizon: int = DEFAULT_HORIZON, **kwargs):
    """:func:`ace_core.grid.envs.make_env` with ``horizon`` steps of forecasts of ``kind`` built from
    the chronics, and the dataset's maintenance (its csv schedule or its random json rules)."""
    from ace_core.grid.envs import make_env

    feeding = forecast_handlers(kind, horizon)
    files = _chronic_files(name)
    maintenance = _maintenance_handler(files)
    if maintenance is not None:
        feeding["maintenance_handler"] = maintenance
    if files and not any(f.startswith("prod_v.") for f in files):
        # no voltage set-points in the chronics (l2rpn_idf_2023): the grid's own are kept
        from grid2op.Chronics.handlers import DoNothingHandler

        feeding["gen_v_handler"] = DoNothingHandler("prod_v")
        feeding.pop("gen_v_for_handler", None)
    # grid2op 1.12's MultifolderWithCache keeps its handlers' "max step" from one reset to the
    # next, so a later reset starting past it fails: read the chronics at each reset instead
    kwargs.setdefault("cache_chronics", False)
    return make_env(name, data_feeding_kwargs=feeding, **kwargs)


def _chronic_files(name: str) -> set[str]:
    """The file names of the dataset's first chronic (empty when it has none)."""
    from ace_core.grid.envs import env_dir

    folder = env_dir(name)
    chronics = sorted(p for p in (folder / "chronics").glob("*") if p.is_dir())
    return {p.name for p in chronics[0].iterdir()} if chronics else set()


def _maintenance_handler(files: set[str]):
    """The handler reading the dataset's maintenance files, if its chronics have any."""
    from grid2op.Chronics.handlers import CSVMaintenanceHandler, JSONMaintenanceHandler

    if "maintenance_meta.json" in files:
        return JSONMaintenanceHandler()
    if files & {"maintenance.csv", "maintenance.csv.bz2"}:
        return CSVMaintenanceHandler()
    return None
