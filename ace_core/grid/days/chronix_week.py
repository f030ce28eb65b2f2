"""Generate one weekly scenario of a grid2op env with chronix2grid, in the days interpreter.

Not imported by GridACE: :mod:`ace_core.grid.days.generate` runs this file as a script, with ``-I``, in
the interpreter that has chronix2grid (``make days-venv``: chronix2grid needs an older PyPSA,
pandas and numpy than GridACE). It writes the scenario under ``--out`` (with chronix2grid's
``generation_quality.json``); an error exits 1 with chronix2grid's message as its last line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings

# what chronix2grid copies next to each scenario, as grid2op's own ``generate_data`` does
FILES_TO_COPY = ("maintenance_meta.json", "params_load.json", "params_forecasts.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-dir", required=True, help="the env's folder (its chronix2grid inputs)")
    parser.add_argument("--out", required=True, help="where the scenario's folder is written")
    parser.add_argument("--start-date", required=True, help="YYYY-MM-DD, one of the env's weeks")
    parser.add_argument("--scenario-id", required=True)
    parser.add_argument("--seeds", type=int, nargs=3, required=True, help="load, renewables, forecasts")
    parser.add_argument("--steps", type=int, default=None, help="scenario length (default: one week)")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    import grid2op
    from chronix2grid.grid2op_utils.utils import generate_a_scenario

    with open(os.path.join(args.env_dir, "scenario_params.json"), encoding="utf-8") as f:
        dt = int(json.load(f)["dt"])
    with open(os.path.join(args.env_dir, "chronix2grid_adddata_kwargs.json"), encoding="utf-8") as f:
        day_lag = int(json.load(f).get("day_lag", 6))
    env = grid2op.make(args.env_dir)
    load_seed, renew_seed, forecast_seed = args.seeds
    # chronix2grid prints every OPF and loss iteration: all of it to stderr, whose last line the
    # caller reports when the week fails
    with contextlib.redirect_stdout(sys.stderr):
        error = generate_a_scenario(
            args.env_dir,
            env.name_gen,
            env.gen_type,
            args.out,
            args.start_date,
            dt,
            args.scenario_id,
            load_seed,
            renew_seed,
            forecast_seed,
            True,  # handle the losses: the generators' set-points hold under grid2op's AC flows
            nb_steps=args.steps,
            files_to_copy=FILES_TO_COPY,
            save_ref_curve=False,
            day_lag=day_lag,
            debug=False,
        )[0]
    if error is not None:
        print(
            f"chronix2grid could not generate {args.start_date}_{args.scenario_id}: {error}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
