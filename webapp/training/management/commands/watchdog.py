"""``manage.py watchdog``: finds the jobs whose worker died and recovers each as its kind wants, through
the registry of :mod:`webapp.jobs.recovery` (each app registers its kinds in ``AppConfig.ready()``):
runs are resumed from their last checkpoint or failed; mines are failed (started again, they resume
from the episodes on disk); a day's play is failed, and the day-comparison page offers it again.

Runs forever (every ``--interval`` seconds) or once with ``--once``. One watchdog per
deployment is enough; several are safe (rows are locked with SKIP LOCKED on Postgres).
"""

from __future__ import annotations

import signal
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from webapp.jobs.recovery import job_recoveries, jobs_recover_stale


class Command(BaseCommand):
    help = (
        "Recover the background jobs (training runs, mines, days' plays) whose worker stopped sending "
        "heartbeats: resume or fail them, as each kind of job wants."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval", type=float, default=max(1.0, settings.GRIDACE_STALE_AFTER_SECONDS / 3)
        )
        parser.add_argument("--once", action="store_true", help="check once and exit")

    def handle(self, *args: Any, interval: float, once: bool, **options: Any) -> None:
        if interval <= 0:
            self.stderr.write(f"--interval={interval} is not accepted; give a number of seconds above 0")
            raise SystemExit(2)
        running = True

        def stop(signum: int, frame: Any) -> None:
            nonlocal running
            running = False

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(
            f"watchdog: {', '.join(job_recoveries())} silent for {settings.GRIDACE_STALE_AFTER_SECONDS:g} s are recovered; "
            f"checking every {interval:g} s"
        )
        while running:
            for recovered in jobs_recover_stale():
                self.stdout.write(str(recovered))
            if once:
                break
            deadline = time.monotonic() + interval
            while running and time.monotonic() < deadline:
                time.sleep(min(0.2, interval))
            close_old_connections()  # a long-lived process: drop connections the database closed
