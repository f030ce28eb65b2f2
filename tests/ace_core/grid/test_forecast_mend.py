"""Generated forecasts above a generator's Pmax: replaced by the real values they forecast."""

import pandas as pd

from ace_core.grid.days.forecast_mend import forecast_rows_above_pmax, mend_forecasts, mend_week

PMAX = pd.Series({"nuclear": 400.0, "wind": 50.0})


def _real() -> dict[str, pd.DataFrame]:
    return {
        "prod_p": pd.DataFrame({"nuclear": [360.0, 361.0, 362.0, 363.0], "wind": [10.0, 11.0, 12.0, 13.0]}),
        "load_p": pd.DataFrame({"load": [300.0, 301.0, 302.0, 303.0]}),
        "load_q": pd.DataFrame({"load": [210.0, 211.0, 212.0, 213.0]}),
    }


def test_one_horizon_rows_above_pmax_are_replaced_by_the_step_they_forecast():
    real = _real()
    forecasts = {key: frame.shift(-1).fillna(frame.iloc[-1]) + 0.5 for key, frame in real.items()}
    forecasts["prod_p"].loc[1, "nuclear"] = 1848.6  # chronix2grid's forecast dispatch, now and then
    forecasts["prod_p"].loc[3, "wind"] = 80.0

    assert mend_forecasts(forecasts, real, PMAX) == 2

    assert forecasts["prod_p"].loc[1].tolist() == [362.0, 12.0]  # the real values of step 2
    assert forecasts["load_p"].loc[1, "load"] == 302.0
    assert forecasts["prod_p"].loc[3].tolist() == [363.0, 13.0]  # the last row: its own step
    assert forecasts["prod_p"].loc[0].tolist() == [361.5, 11.5]  # valid rows are kept


def test_with_several_horizons_each_row_takes_the_step_of_its_own_horizon():
    real = _real()
    # two horizons a step, step-major: row 2 * s + h forecasts step s + h + 1
    forecasts = {key: frame.loc[frame.index.repeat(2)].reset_index(drop=True) for key, frame in real.items()}
    forecasts["prod_p"].loc[[2, 3], "nuclear"] = 15_000.0  # step 1, both horizons
    forecasts["prod_p"].loc[5, "wind"] = 50.05  # within 0.1 MW of Pmax: kept

    assert mend_forecasts(forecasts, real, PMAX) == 2

    assert forecasts["prod_p"].loc[2].tolist() == [362.0, 12.0]  # step 1 + 5 min
    assert forecasts["prod_p"].loc[3].tolist() == [363.0, 13.0]  # step 1 + 10 min
    assert forecasts["load_q"].loc[[2, 3], "load"].tolist() == [212.0, 213.0]
    assert forecasts["prod_p"].loc[5, "wind"] == 50.05


def test_a_weeks_files_are_counted_and_mended_in_place(tmp_path):
    real = _real()
    for key, frame in real.items():
        frame.to_csv(tmp_path / f"{key}.csv.bz2", sep=";", index=False)
        forecast = frame.copy()
        if key == "prod_p":
            forecast.loc[0, "nuclear"] = 900.0
        forecast.to_csv(tmp_path / f"{key}_forecasted.csv.bz2", sep=";", index=False)

    assert forecast_rows_above_pmax(tmp_path, PMAX) == 1
    assert mend_week(tmp_path, PMAX) == 1

    assert forecast_rows_above_pmax(tmp_path, PMAX) == 0
    mended = pd.read_csv(tmp_path / "prod_p_forecasted.csv.bz2", sep=";")
    assert mended.loc[0].tolist() == [361.0, 11.0]
