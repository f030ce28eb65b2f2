"""Recommendation latency inside the live feed worker: the recommendation pipeline (doing nothing,
reconnect, the policy's top k, the expert's best 4 of 32; one batch of one-step simulations, N-1
of each, a one-hour look-ahead over the live env's forecasts), as recorded by the worker at every
step, with its parts (the step's ``assessment.timings_ms``).

For each env it sets up the embedded default (a SQLite file in a temporary folder), deploys a
policy checkpoint with random weights (speed, not quality, is measured here: the code path is a
trained policy's), starts a session at full speed and runs the real ``SessionFeed`` for N steps in
this process, then reads the ``recommend_ms`` the worker persisted. Prints JSON.

    .venv/bin/python bench/live_recommend.py [--steps 300] [--k 3] [--envs l2rpn_case14_sandbox,l2rpn_wcci_2020]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS_MS = {"l2rpn_case14_sandbox": 40.0, "l2rpn_wcci_2020": 100.0}
"""the recommendation pipeline's targets (README): a step at 1 step/s leaves far more room"""
PARTS = ("policy_ms", "simulate_ms", "n1_ms", "look_ahead_ms", "solver_ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--envs", default="l2rpn_case14_sandbox,l2rpn_wcci_2020")
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="gridace-live-bench-"))
    os.environ.update({"GRIDACE_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "webapp.settings"})
    for key in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import numpy as np
    import torch
    from django.core.management import call_command

    from ace_core.live import untrained_policy
    from webapp.accounts.services import role_groups_sync, user_create_with_role
    from webapp.jobs.models import JobStatus
    from webapp.operations.models import SessionStep
    from webapp.operations.services import session_start, sessions_claim
    from webapp.operations.worker.feed import SessionFeed
    from webapp.training.models import Checkpoint, TrainingRun
    from webapp.training.services.deployment import checkpoint_deploy

    torch.set_num_threads(1)  # as the live_feed command does
    call_command("migrate", verbosity=0)
    role_groups_sync()
    engineer = user_create_with_role(username="bench", password="bench-password-123", role="engineer")
    results = {}
    for env_name in args.envs.split(","):
        run = TrainingRun.objects.create(
            config={"env": env_name},
            env=env_name,
            total_steps=1,
            status=JobStatus.SUCCEEDED,
            launched_by=engineer,
            out_dir=str(var_dir),
        )
        policy = untrained_policy(env_name, var_dir / env_name / "checkpoint.pt")
        checkpoint = Checkpoint.objects.create(run=run, step=1, path=str(policy))
        checkpoint_deploy(checkpoint=checkpoint, user=engineer)
        session = session_start(user=engineer, scenario_index=0, k=args.k, speed_seconds=0.0)
        token = f"bench-{env_name}"
        sessions_claim(worker_token=token)
        started = time.perf_counter()
        SessionFeed(session_id=session.pk, worker_token=token, publisher=None).run(max_steps=args.steps)
        seconds = time.perf_counter() - started
        rows = SessionStep.objects.filter(session=session).exclude(recommend_ms=None)
        times = np.array(list(rows.values_list("recommend_ms", flat=True)))
        assessments = [a for a in rows.values_list("assessment", flat=True) if a]
        parts = {
            f"{part}_p50": round(
                float(np.percentile([a["timings_ms"].get(part, 0.0) for a in assessments], 50)), 2
            )
            for part in PARTS
        }
        cards = np.array([session.recommendations.filter(step=row.step).count() for row in rows])
        results[env_name] = {
            "steps": int(len(times)),
            "k": args.k,
            "recommend_ms_p50": round(float(np.percentile(times, 50)), 2),
            "recommend_ms_p95": round(float(np.percentile(times, 95)), 2),
            "recommend_ms_max": round(float(times.max()), 2),
            "target_p95_ms": TARGETS_MS.get(env_name),
            **parts,
            "cards_per_step_mean": round(float(cards.mean()), 2),
            "steps_without_card": int((cards == 0).sum()),
            "forecast": assessments[-1]["forecast"]["kind"] if assessments else None,
            "worker_step_ms_mean": round(1000 * seconds / max(1, len(times)), 2),
            "note": "policy with random weights; the whole pipeline: simulation, N-1, look-ahead, ranking",
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
