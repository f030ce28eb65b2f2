"""``manage.py live_feed``: the worker that steps live sessions (see webapp.operations.worker.feed).

Run one or more (on any machine sharing the database); each claims sessions nobody owns and
resumes sessions whose worker stopped or died. Ctrl-C / SIGTERM hand the sessions back.
"""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand

from webapp.operations.worker.feed import FeedWorker


class Command(BaseCommand):
    help = "Step live grid sessions at their speed, with the deployed policy's recommendations."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--max-sessions", type=int, default=8, help="sessions this worker runs at once")

    def handle(self, *args: Any, max_sessions: int, **options: Any) -> None:
        import torch

        torch.set_num_threads(1)  # one thread per session is the fastest on a shared CPU
        worker = FeedWorker(max_sessions=max_sessions)

        def stop(signum: int, frame: Any) -> None:
            worker.stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(f"live feed {worker.worker_token[:8]} waiting for sessions")
        worker.run()
