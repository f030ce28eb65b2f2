"""Generated forecasts that put a generator above its Pmax, replaced by what they forecast.

chronix2grid's forecast dispatch now and then returns a row far outside the grid's limits: on
the whole 118-bus grid of the NeurIPS case, three nuclear units at 1,849 MW of 400; on an
l2rpn_idf_2023 week, 20 generators at up to 39 times their Pmax, at every horizon of one step.
An agent that checks its actions by simulation would then be judged against a grid that cannot
exist. Such rows are replaced by the real values of the step they forecast.

A week's forecast files hold ``horizons`` rows per step, step-major (step ``s`` at horizon ``h``,
``h`` from 0, is row ``s * horizons + h`` and forecasts step ``s + h + 1``), one horizon for the
2020 grids and twelve for idf_2023.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SERIES = ("load_p", "load_q", "prod_p")
TOLERANCE_MW = 0.1


def broken_rows(prod_p: pd.DataFrame, pmax: pd.Series) -> np.ndarray:
    """The rows where some generator is above its Pmax by more than :data:`TOLERANCE_MW`."""
    return (prod_p > pmax[prod_p.columns] + TOLERANCE_MW).any(axis=1).to_numpy()


def mend_forecasts(forecasts: dict[str, pd.DataFrame], real: dict[str, pd.DataFrame], pmax: pd.Series) -> int:
    """Replace, in place, every forecast row of ``forecasts`` that puts a generator above its
    Pmax by the real values of the step it forecasts (the last step past the end); returns how
    many rows were replaced."""
    steps = len(real["prod_p"])
    horizons = max(len(forecasts["prod_p"]) // steps, 1)
    rows = np.flatnonzero(broken_rows(forecasts["prod_p"], pmax))
    if rows.size:
        forecast_steps = np.minimum(rows // horizons + rows % horizons + 1, steps - 1)
        for key, frame in forecasts.items():
            frame.iloc[rows] = real[key].iloc[forecast_steps].to_numpy()
    return int(rows.size)


def mend_week(folder: Path, pmax: pd.Series) -> int:
    """:func:`mend_forecasts` on a week's files in ``folder``, rewritten only where mended."""

    def read(name: str) -> pd.DataFrame:
        return pd.read_csv(folder / f"{name}.csv.bz2", sep=";")

    forecasts = {key: read(f"{key}_forecasted") for key in SERIES}
    mended = mend_forecasts(forecasts, {key: read(key) for key in SERIES}, pmax)
    if mended:
        for key, frame in forecasts.items():
            frame.to_csv(folder / f"{key}_forecasted.csv.bz2", sep=";", index=False)
    return mended


def forecast_rows_above_pmax(folder: Path, pmax: pd.Series) -> int:
    """How many forecast rows of the week in ``folder`` put a generator above its Pmax."""
    return int(broken_rows(pd.read_csv(folder / "prod_p_forecasted.csv.bz2", sep=";"), pmax).sum())
