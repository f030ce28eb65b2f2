"""SIGKILL recovery of a training worker, with the real trainer and the default settings.

Sets up the embedded default (SQLite file in a temporary folder), launches a run, starts a
``db_worker`` and the ``watchdog``, kills the worker with SIGKILL after the first checkpoint,
then measures how long until the run is detected as lost and resumed, and lets a new worker
finish it. Prints the figures as JSON.

    .venv/bin/python bench/web_recovery.py [--steps 4000] [--checkpoint-every 500]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="l2rpn_case14_sandbox")
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--checkpoint-every", type=int, default=500)
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="gridace-recovery-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update({"GRIDACE_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "webapp.settings"})
    os.environ.update(env)
    for key in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from webapp.jobs.models import JobStatus
    from webapp.training.models import MetricPoint, TrainingRun

    def manage(*command: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait(predicate, timeout: float, what: str) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                return time.monotonic()
            time.sleep(0.2)
        raise SystemExit(f"timed out after {timeout} s waiting for {what}")

    assert manage("migrate", "--noinput").wait() == 0
    env["GRIDACE_DEMO_PASSWORD"] = "bench-password-123"
    assert manage("seed_demo").wait() == 0
    settings_args = [
        f"env={args.env}",
        f"steps={args.steps}",
        f"checkpoint_every={args.checkpoint_every}",
        "log_every=100",
        "learning_starts=32",
        "batch_size=32",
    ]
    assert (
        manage("launch_run", "--user", "engineer", *sum((["--set", a] for a in settings_args), [])).wait()
        == 0
    )
    run = TrainingRun.objects.get()

    worker_args = ("db_worker", "--queue-name", "training", "--no-reload", "--no-startup-delay")
    worker = manage(*worker_args)
    watchdog = manage("watchdog")
    processes = [worker, watchdog]
    try:
        wait(lambda: run.checkpoints.filter(step__gt=0).exists(), 300, "the first checkpoint")
        checkpoint_step = run.checkpoints.order_by("-id").first().step
        worker.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        worker.wait()

        def status() -> str:
            return TrainingRun.objects.values_list("status", flat=True).get(pk=run.pk)

        detected = wait(lambda: status() != JobStatus.RUNNING, 180, "stale-run detection")
        outcome = status()
        second = manage(*worker_args)
        processes.append(second)
        restarted = wait(lambda: status() == JobStatus.RUNNING, 120, "the resumed attempt")
        finished = wait(
            lambda: status() in (JobStatus.SUCCEEDED, JobStatus.FAILED), 900, "the end of the run"
        )
        run.refresh_from_db()
        steps = list(MetricPoint.objects.filter(run=run).order_by("step").values_list("step", flat=True))
        print(
            json.dumps(
                {
                    "env": args.env,
                    "heartbeat_seconds": settings.GRIDACE_HEARTBEAT_SECONDS,
                    "stale_after_seconds": settings.GRIDACE_STALE_AFTER_SECONDS,
                    "watchdog_interval_seconds": max(1.0, settings.GRIDACE_STALE_AFTER_SECONDS / 3),
                    "killed_after_checkpoint_step": checkpoint_step,
                    "detected_seconds_after_kill": round(detected - killed, 1),
                    "outcome": outcome,
                    "resumed_running_seconds_after_kill": round(restarted - killed, 1),
                    "finished_seconds_after_kill": round(finished - killed, 1),
                    "final_status": run.status,
                    "attempt": run.attempt,
                    "progress_step": run.progress_step,
                    "metric_steps_unique": len(steps) == len(set(steps)),
                    "recovery_reason": run.error,
                },
                indent=2,
            )
        )
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)


if __name__ == "__main__":
    main()
