"""``manage.py watchdog``: finds runs whose worker died and resumes or fails them, and fails the
mines whose worker died (started again, they resume from the episodes on disk).

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

from webapp.training.services.recovery import mines_recover_stale, runs_recover_stale


class Command(BaseCommand):
    help = "Resume or fail training runs, and fail mines, whose worker stopped sending heartbeats."

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
            f"watchdog: runs and mines silent for {settings.GRIDACE_STALE_AFTER_SECONDS:g} s are recovered; "
            f"checking every {interval:g} s"
        )
        while running:
            for recovery in runs_recover_stale():
                self.stdout.write(f"run {recovery.run_id} {recovery.outcome}: {recovery.reason}")
            for lost in mines_recover_stale():
                self.stdout.write(f"mine {lost.mine_id} ({lost.name}) failed: {lost.reason}")
            if once:
                break
            deadline = time.monotonic() + interval
            while running and time.monotonic() < deadline:
                time.sleep(min(0.2, interval))
            close_old_connections()  # a long-lived process: drop connections the database closed
