"""``manage.py demo``: the whole platform on this machine, in one command (``make demo``).

Migrates the database (a SQLite file under ``var/`` unless ``DATABASE_URL`` says otherwise),
creates the demo users, starts the web server (daphne), a training worker (db_worker) and the
watchdog, launches a short training run on a bundled grid with the offline default LLM, and
prints the address and the logins. Ctrl-C stops everything it started.

``--check`` stops once the page answers and the worker has started the run: a smoke test of the
set-up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from webapp.training.management.commands.launch_run import parse_assignments
from webapp.training.models import RunStatus, TrainingRun
from webapp.training.services.runs import run_launch

DEMO_RUN = {
    "env": "rte_case14_realistic",
    "steps": 3000,
    "llm": "local",
    "log_every": 100,
    "checkpoint_every": 500,
    "learning_starts": 64,
    "batch_size": 64,
}


class Command(BaseCommand):
    help = "Run the demo: web server, training worker, watchdog and a short training run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-run", action="store_true", help="do not launch the demo training run")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            dest="assignments",
            metavar="FIELD=VALUE",
            help="change a setting of the demo run, e.g. --set steps=500",
        )
        parser.add_argument(
            "--check", action="store_true", help="exit once the site answers and the run started"
        )

    def handle(
        self, *args: Any, port: int, no_run: bool, assignments: list[str], check: bool, **options: Any
    ) -> None:
        root = Path(settings.BASE_DIR)
        call_command("migrate", "--noinput", verbosity=0)
        call_command("seed_demo", stdout=self.stdout)
        children = [
            self._start(
                root,
                "web",
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "webapp.asgi:application",
                ],
            ),
            self._start(
                root,
                "worker",
                [
                    sys.executable,
                    "manage.py",
                    "db_worker",
                    "--queue-name",
                    "training,default,explain",
                    "--no-reload",
                    "--no-startup-delay",
                    "--interval",
                    "0.5",
                ],
            ),
            self._start(root, "watchdog", [sys.executable, "manage.py", "watchdog"]),
            self._start(root, "live_feed", [sys.executable, "manage.py", "live_feed"]),
        ]
        try:
            url = f"http://127.0.0.1:{port}/"
            self._wait_for_web(url, children[0])
            run = None if no_run else self._launch(assignments)
            self.stdout.write(self.style.SUCCESS(f"\nGridACE is running at {url}"))
            self.stdout.write("log in as engineer (training runs), reviewer (review queue) or operator")
            if run is not None:
                self.stdout.write(f"demo run {run.pk}: {url}runs/{run.pk}/")
            if check:
                self._wait_until_started(run)
                self.stdout.write("check passed: the site answers and the worker started the run")
                return
            self.stdout.write("Ctrl-C stops the server, the workers, the live feed and the watchdog.")
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            dead = [child.args[2] for child in children if child.poll() is not None]
            raise CommandError(f"a demo process stopped unexpectedly: {dead}; see its output above")
        except KeyboardInterrupt:
            self.stdout.write("\nstopping…")
        finally:
            self._stop(children)

    def _start(self, root: Path, name: str, command: list[str]) -> subprocess.Popen:
        # Own process group: Ctrl-C reaches this command only, which then stops each child in turn.
        return subprocess.Popen(command, cwd=root, env=os.environ.copy(), start_new_session=True)

    def _wait_for_web(self, url: str, web: subprocess.Popen, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if web.poll() is not None:
                raise CommandError(f"the web server exited with code {web.returncode}; is port {url} in use?")
            try:
                with urllib.request.urlopen(f"{url}login/", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise CommandError(f"the web server did not answer at {url} within {timeout:g} s")

    def _launch(self, assignments: list[str]) -> TrainingRun:
        engineer = get_user_model().objects.get(username="engineer")
        try:
            config = TrainConfig.from_dict({**DEMO_RUN, **parse_assignments(assignments)})
            return run_launch(config=config, launched_by=engineer, label="demo")
        except ConfigError as error:
            raise CommandError(str(error)) from error

    def _wait_until_started(self, run: TrainingRun | None, timeout: float = 120) -> None:
        if run is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status != RunStatus.QUEUED:
                if run.status == RunStatus.FAILED:
                    raise CommandError(f"the demo run failed: {run.error}")
                return
            time.sleep(0.3)
        raise CommandError(f"no worker started the demo run within {timeout:g} s")

    def _stop(self, children: list[subprocess.Popen]) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
