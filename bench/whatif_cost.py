"""What-if latency in the web process against the length of the session, and whether one session's
what-if waits for another's.

Sets up the embedded default (a SQLite file in a temporary folder), deploys a policy checkpoint
with random weights, starts a session of a 14-bus day (l2rpn_case14_sandbox, 288 steps) and runs
the real feed worker to step ``--late`` in this process. Then asks the web process's what-if
(``webapp.operations.mirror.what_if``, what ``POST /live/<id>/whatif/`` calls) the way operators
do: the first question at ``--late`` (the mirror opens its env and catches up), then ``--rounds``
rounds of one question at step 0 and one at step ``--late`` (an operator looking back, then at the
present). Last, it measures a what-if on a second session while the first session's grid catches
up from a cold start in another thread (a process-wide lock makes it wait). Prints JSON.

    .venv/bin/python bench/whatif_cost.py [--late 280] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = "l2rpn_case14_sandbox"
ACTION = {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}


def set_up(late: int):
    """Migrate, deploy a policy and feed two sessions to step ``late``; the two sessions."""
    import django

    django.setup()
    import torch
    from django.core.management import call_command

    from ace_core.live import untrained_policy
    from webapp.accounts.services import role_groups_sync, user_create_with_role
    from webapp.jobs.models import JobStatus
    from webapp.operations.services import session_start, sessions_claim
    from webapp.operations.worker.feed import SessionFeed
    from webapp.training.models import Checkpoint, TrainingRun
    from webapp.training.services.deployment import checkpoint_deploy

    torch.set_num_threads(1)  # as the live_feed command does
    call_command("migrate", verbosity=0)
    role_groups_sync()
    engineer = user_create_with_role(username="bench", password="bench-password-123", role="engineer")
    var_dir = Path(os.environ["GRIDACE_VAR_DIR"])
    run = TrainingRun.objects.create(
        config={"env": ENV},
        env=ENV,
        total_steps=1,
        status=JobStatus.SUCCEEDED,
        launched_by=engineer,
        out_dir=str(var_dir),
    )
    policy = untrained_policy(ENV, var_dir / "checkpoint.pt", hidden=32)
    checkpoint_deploy(checkpoint=Checkpoint.objects.create(run=run, step=1, path=str(policy)), user=engineer)
    sessions = []
    for seed in (0, 1):
        session = session_start(user=engineer, scenario_index=0, seed=seed, k=1, speed_seconds=0.0)
        sessions_claim(worker_token="bench")
        SessionFeed(session_id=session.pk, worker_token="bench", publisher=None).run(max_steps=late)
        session.refresh_from_db()
        sessions.append(session)
    return sessions


def timed_what_if(session, step: int) -> float:
    from webapp.operations import mirror

    started = time.perf_counter()
    outcome = mirror.what_if(session=session, step=step, action=ACTION)
    assert outcome["step"] == step and outcome["max_rho_after"] is not None, outcome
    return 1000 * (time.perf_counter() - started)


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(times), 2),
        "max_ms": round(max(times), 2),
        "min_ms": round(min(times), 2),
    }


def contention(first, second, late: int) -> dict[str, float]:
    """A what-if on ``second`` (warm) asked while ``first``'s grid catches up from a cold start."""
    from webapp.operations import mirror

    mirror.forget(first)
    timed_what_if(second, late)  # warm
    alone = [timed_what_if(second, late) for _ in range(5)]
    started = threading.Event()

    def cold_catch_up() -> None:
        started.set()
        timed_what_if(first, late)

    worker = threading.Thread(target=cold_catch_up)
    worker.start()
    started.wait()
    time.sleep(0.1)  # let the other thread open the env and start catching up
    during = timed_what_if(second, late)
    worker.join()
    return {
        "other_session_alone_median_ms": round(statistics.median(alone), 2),
        "other_session_during_ms": round(during, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--late", type=int, default=280, help="the session's current step")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="gridace-whatif-bench-"))
    os.environ.update({"GRIDACE_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "webapp.settings"})
    for key in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(ROOT))
    first, second = set_up(args.late)

    cold = timed_what_if(first, args.late)
    at_zero, at_late = [], []
    for _ in range(args.rounds):
        at_zero.append(timed_what_if(first, 0))
        at_late.append(timed_what_if(first, args.late))
    print(
        json.dumps(
            {
                "env": ENV,
                "session_step": args.late,
                "rounds": args.rounds,
                "first_what_if_ms": round(cold, 2),
                "what_if_at_step_0": summary(at_zero),
                f"what_if_at_step_{args.late}_after_step_0": summary(at_late),
                "contention": contention(first, second, args.late),
                "note": "first_what_if_ms includes opening the env and catching up (once per session and process)",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
