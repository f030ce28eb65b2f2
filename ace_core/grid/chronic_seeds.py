"""Planned outages drawn from the grid seed and the chronic, however the chronics are read.

Envs with a maintenance model (``maintenance_meta.json``: l2rpn_wcci_2020, l2rpn_idf_2023) draw
each chronic's planned outages when it is seeded. grid2op gives the chronic a seed taken from its
reader's random generator, in an order that depends on the reader:

- ``Multifolder`` (evaluation, the Runner) draws one number per chronic it opens;
- ``MultifolderWithCache`` (training, mining, the live console) draws one per cached chronic in
  cache order, so a chronic's outages depend on its place in the cache.

The same "day X, grid seed S" then had other outages in the console than in ``evaluate`` (measured
on the bundled WCCI day ``@576+288``: seed 0 took lines 27 and 56 out in the cache, only 27 in the
Runner). The readers here seed each chronic with :func:`chronic_seed`, a hash of the reader's seed
and the chronic's folder name, so both readers draw the same outages for the same day and seed,
whatever else is cached or was played before. Envs without a maintenance model are unchanged:
their chronics draw nothing at random.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from grid2op.Chronics import Multifolder, MultifolderWithCache
from grid2op.dtypes import dt_int

from ace_core.grid.demand import GeneratorLimits, load_weights, scale_chronic, spread_loads

_SEED_LIMIT = int(np.iinfo(dt_int).max)


def chronic_seed(reader_seed: int, chronic_path: str | Path) -> int:
    """The seed of one chronic: stable across processes, readers and cache orders."""
    digest = hashlib.sha256(f"{int(reader_seed)}/{Path(chronic_path).name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % _SEED_LIMIT


class SeededMultifolder(Multifolder):
    """``Multifolder`` whose opened chronic is seeded by :func:`chronic_seed` and, with a
    ``demand_scale`` other than 1, scaled (:mod:`ace_core.grid.demand`), within the generators'
    ``limits`` when they are known; with a ``demand_spread``, its loads' shares are drawn from the
    grid seed and the chronic (:func:`ace_core.grid.demand.spread_loads`). The scale, the spread and
    the limits are the reader's keyword arguments, so grid2op's Runner, which builds its env from
    ``get_params_for_runner()``, plays the same days."""

    def __init__(
        self,
        *args,
        demand_scale: float = 1.0,
        demand_spread: float = 0.0,
        limits: GeneratorLimits | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.demand_scale = demand_scale
        self.demand_spread = demand_spread
        self.limits = limits

    def get_kwargs(self, dict_):
        """What grid2op's Runner passes to the reader of its own env: the generators' limits too,
        which :func:`ace_core.grid.envs.make_env` gives the reader once the env knows them."""
        super().get_kwargs(dict_)
        if self.limits is not None:
            dict_["limits"] = self.limits

    def initialize(self, *args, **kwargs):
        super().initialize(*args, **kwargs)
        if self.seed_used is not None:
            self.data.seed(chronic_seed(self.seed_used, self.data.path))
            self.data.regenerate_with_new_seed()  # the outages, drawn again from that seed
        if self.demand_scale != 1.0:
            scale_chronic(self.data, self.demand_scale, self.limits)
        if self.demand_spread:
            seed = 0 if self.seed_used is None else self.seed_used  # grid2op.make's first reset
            weights = load_weights(seed, Path(self.data.path).name, self.data.n_load, self.demand_spread)
            spread_loads(self.data, weights)


class SeededMultifolderWithCache(MultifolderWithCache):
    """``MultifolderWithCache`` whose cached chronics are seeded by :func:`chronic_seed`."""

    def seed(self, seed: int):
        res = Multifolder.seed(self, seed)  # the reader's own generator, not the cache's draws
        self._cached_seeds = np.array(
            [chronic_seed(self.seed_used, path) for path in self.subpaths], dtype=dt_int
        )
        for data, seed_of_chronic in zip(self._cached_data, self._cached_seeds, strict=True):
            if data is not None:
                data.seed(int(seed_of_chronic))
                data.regenerate_with_new_seed()
        return res
