"""``bench`` and ``export``: performance figures, and a run's policy as an L2RPN submission."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="print performance figures as JSON")
    bench.add_argument("--env", action="append", help="env to benchmark (repeatable)")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions (for smoke tests)")
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from ace_core.evaluation.bench import run_benchmarks

    print(json.dumps(run_benchmarks(args.env, quick=args.quick), indent=2))
    return 0


def add_export(sub) -> None:
    export = sub.add_parser(
        "export", help="write a run's policy as an L2RPN submission folder (make_agent, weights)"
    )
    export.add_argument("--run", required=True, help="run directory or checkpoint file")
    export.add_argument("--out", required=True, help="new or empty folder for the submission")
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ace_core.l2rpn.export import export_run

    meta = export_run(Path(args.run), Path(args.out))
    print(json.dumps({"out": args.out, **{k: v for k, v in meta.items() if k != "load_scale"}}))
    return 0
