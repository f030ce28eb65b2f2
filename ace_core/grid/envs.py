"""Environment factory: every grid2op env on the LightSim2Grid backend, offline by default.

``make_env(name)`` opens a full dataset when there is one in ``$GRIDACE_DATA_DIR`` or grid2op's
data folder (downloaded, or grown with generated days: :mod:`ace_core.grid.days.generate`), and the small
copy bundled with the grid2op package otherwise (``test=True``). It never downloads: an
unknown name fails at once with the list of names that work here.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from functools import cache
from pathlib import Path

from ace_core.errors import ConfigError, UnknownEnvError

# grid2op suggests numba on import; LightSim2Grid does not need it (and numba costs a JIT at make).
warnings.filterwarnings("ignore", message=".*numba.*")

import grid2op  # noqa: E402
from lightsim2grid import LightSimBackend  # noqa: E402

from ace_core.grid.chronic_seeds import SeededMultifolder, SeededMultifolderWithCache  # noqa: E402
from ace_core.grid.demand import (  # noqa: E402
    check_demand_scale,
    check_demand_spread,
    generator_limits,
    scale_demand,
)
from ace_core.grid.opponents import DEFAULT_OPPONENT, opponent_kwargs  # noqa: E402
from ace_core.grid.reward import MarginReward  # noqa: E402

# Environments that ship with grid2op but are not L2RPN power grids with topology control, or
# that need extra packages: left out of the list users choose from.
_EXCLUDED = {"blank", "l2rpn_2019", "l2rpn_case14_sandbox_diff_grid", "l2rpn_neurips_2020_track2"}


def data_folders() -> list[Path]:
    """Where full datasets are looked for: ``$GRIDACE_DATA_DIR`` (downloaded, or grown with
    ``python -m ace_core days``), then grid2op's own data folder."""
    folders = [Path(grid2op.get_current_local_dir())]
    configured = os.environ.get("GRIDACE_DATA_DIR", "").strip()
    if configured:
        folders.insert(0, Path(configured).expanduser())
    return folders


def downloaded_env_dir(name: str) -> Path | None:
    """The folder of a full dataset (downloaded or with generated days), if the user has one and
    grid2op is not forced onto its bundled copies (``_GRID2OP_FORCE_TEST=1``)."""
    if os.environ.get("_GRID2OP_FORCE_TEST") == "1":
        return None
    for root in data_folders():
        folder = root / name
        if (folder / "chronics").is_dir():
            return folder
    return None


def bundled_env_dir(name: str) -> Path:
    """The small copy of ``name`` that ships inside the grid2op package."""
    return Path(grid2op.__file__).parent / "data" / name


def env_dir(name: str) -> Path:
    """The folder ``make_env(name)`` reads: the full dataset if there is one, else the bundled copy."""
    return downloaded_env_dir(name) or bundled_env_dir(name)


def dataset_fingerprint(name: str) -> str:
    """What identifies an env's data when it is not the bundled copy: a hash of its chronics'
    names (``""`` for the bundled copy, so keys made before full datasets stay as they were)."""
    folder = downloaded_env_dir(name)
    if folder is None:
        return ""
    names = sorted(p.name for p in (folder / "chronics").iterdir() if p.is_dir())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]


@cache
def available_env_names() -> tuple[str, ...]:
    """Names that ``make_env`` accepts on this machine: bundled test copies and downloaded sets."""
    bundled = set(grid2op.list_available_test_env())
    downloaded = {
        p.name
        for root in data_folders()
        if root.is_dir()
        for p in root.iterdir()
        if (p / "chronics").is_dir()
    }
    return tuple(sorted((bundled | downloaded) - _EXCLUDED))


def make_env(
    name: str,
    *,
    cache_chronics: bool | None = None,
    opponent: str = DEFAULT_OPPONENT,
    demand_scale: float = 1.0,
    demand_spread: float = 0.0,
    **kwargs,
):
    """A grid2op environment on LightSimBackend with :class:`MarginReward`.

    ``cache_chronics`` keeps every time series in memory (``MultifolderWithCache``): resets of
    long chronics drop from ~0.2-0.7 s to a few ms. By default (None) the chronics are cached
    unless a ``demand_spread`` is asked. Either way a chronic's planned outages depend only on the
    grid seed and the chronic (:mod:`ace_core.grid.chronic_seeds`). ``opponent`` picks the line
    attacks (:mod:`ace_core.grid.opponents`: ``env``, its own; ``none``; ``random-line``).
    ``demand_scale`` multiplies every load and production (:mod:`ace_core.grid.demand`), in the
    cache or as each chronic is read; ``demand_spread`` draws each load's share of it from the grid
    seed, as each chronic is read (so not with ``cache_chronics=True``). Extra keyword arguments go
    to ``grid2op.make``.
    """
    names = available_env_names()
    if name not in names:
        raise UnknownEnvError(f"unknown env {name!r}; available here: {', '.join(names)}")
    demand_scale = check_demand_scale(demand_scale)  # before the env is made: a bad value fails fast
    demand_spread = check_demand_spread(demand_spread)
    if cache_chronics is None:
        cache_chronics = not demand_spread
    if cache_chronics and demand_spread:
        raise ConfigError(
            "a demand spread is drawn from the grid seed as each chronic is read; accepted with the "
            "chronics read at each reset (make_env's default with a spread), not with cache_chronics=True"
        )
    options = {
        "backend": LightSimBackend(),
        "reward_class": MarginReward,
        **opponent_kwargs(name, opponent),
        **kwargs,
    }
    # planned outages drawn from (grid seed, chronic) by either reader (ace_core.grid.chronic_seeds)
    options["chronics_class"] = SeededMultifolderWithCache if cache_chronics else SeededMultifolder
    if not cache_chronics and (demand_scale != 1.0 or demand_spread):  # the reader does it, as it reads
        options["data_feeding_kwargs"] = {
            **options.get("data_feeding_kwargs", {}),
            "demand_scale": demand_scale,
            "demand_spread": demand_spread,
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = downloaded_env_dir(name)
        env = grid2op.make(str(folder), **options) if folder else grid2op.make(name, test=True, **options)
    env.gridace_name = name
    env.gridace_opponent = opponent
    if cache_chronics:
        data = env.chronics_handler.real_data
        data.set_filter(lambda _path: True)
        # each chronic at its own length: the cache would give every one the length of the first
        # it read (a 10-day chronic after generated weeks was cut to 7 days)
        data.max_iter = -1
        data.reset()
    if cache_chronics and demand_scale != 1.0:
        scale_demand(env, demand_scale)
    if not cache_chronics and demand_scale != 1.0:
        # the generators' Pmax are known once the env is made: the reader keeps each chronic it
        # reads within them, and passes them on to the Runner's copy (SeededMultifolder.get_kwargs)
        env.chronics_handler.real_data.limits = generator_limits(env)
    env.gridace_demand_scale = demand_scale
    env.gridace_demand_spread = demand_spread
    return env


def open_env_folder(folder: Path, **kwargs):
    """An env from a local copy of a dataset folder (e.g. a writable copy for grid2op's scores),
    with the same backend and reward as :func:`make_env`; extra keyword arguments go to
    ``grid2op.make``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = grid2op.make(str(folder), backend=LightSimBackend(), reward_class=MarginReward, **kwargs)
    env.gridace_name = Path(folder).name
    return env
