"""``manage.py demo``: the whole platform on this machine, in one command (``make demo``).

Migrates the database (a SQLite file under ``var/`` unless ``DATABASE_URL`` says otherwise),
creates the demo users, deploys a policy for the live console and starts a live session with it
(see :func:`live_demo_setup`), starts the web server (daphne), a training worker (db_worker), the
live feed and the watchdog, launches a short training run on a bundled grid with the offline
default LLM, and prints the address and the logins. Ctrl-C, SIGTERM and SIGHUP stop everything it
started (see :mod:`webapp.children`); when its port is taken (by an earlier demo that was killed,
say) it names the process holding it and stops before starting anything. Running
it again reuses what the previous run set up (users, policy, live session, a demo run still
queued or running) instead of making copies.

``--live-policy PATH`` (default ``GRIDACE_DEMO_LIVE_POLICY``) deploys a policy trained beforehand
instead (a checkpoint file, or a run directory: its ``best.pt``, else its ``checkpoint.pt``), e.g. a
behaviour-cloned 36-bus one from ``python -m ace_core pretrain``: checked before anything starts,
recorded as a succeeded run, deployed (replacing another deployed policy) and played by the live
session on its own env.

``--check`` stops once the page answers, the worker has started the run and the live feed has
stepped the live session: a smoke test of the set-up (with a freshly initialised live policy
unless ``--live-policy-steps`` or ``--live-policy`` says otherwise).
"""

from __future__ import annotations

import os
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
from django.urls import reverse

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from webapp import children as child_processes
from webapp.jobs.models import ACTIVE_STATUSES, JobStatus
from webapp.operations.models import LiveSession, SessionStatus
from webapp.training.management.commands.launch_run import parse_assignments
from webapp.training.models import TrainingRun
from webapp.training.services.demo_live import LIVE_POLICY_RUN, LivePolicy, live_demo_setup, live_policy_check
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

DEMO_RUN_LABEL = "demo"


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
            "--check",
            action="store_true",
            help="exit once the site answers, the run started and the live session moves",
        )
        parser.add_argument("--no-live", action="store_true", help="do not start the demo live session")
        parser.add_argument(
            "--live-policy-steps",
            type=int,
            default=None,
            metavar="N",
            help="training steps of the live console's policy when none is deployed "
            f"(default {LIVE_POLICY_RUN['steps']}, 0 with --check; 0 = freshly initialised weights)",
        )
        parser.add_argument(
            "--live-policy",
            default=None,
            metavar="PATH",
            help="deploy this policy trained beforehand for the live console (a checkpoint file or a "
            "run directory, e.g. runs/bc36 from `python -m ace_core pretrain`), replacing the deployed "
            "one; the live session plays its env (default: GRIDACE_DEMO_LIVE_POLICY)",
        )

    def handle(
        self,
        *args: Any,
        port: int,
        no_run: bool,
        assignments: list[str],
        check: bool,
        no_live: bool,
        live_policy_steps: int | None,
        live_policy: str | None,
        **options: Any,
    ) -> None:
        if live_policy and no_live:
            raise CommandError(
                "--live-policy deploys a policy for the live session and --no-live starts none; "
                "give one of them"
            )
        if live_policy is None:
            live_policy = os.environ.get("GRIDACE_DEMO_LIVE_POLICY", "")
        self._check_port(port)
        policy = None
        if live_policy and not no_live:
            self.stdout.write(f"checking the live console's policy {live_policy}…")
            policy = live_policy_check(live_policy)
        with child_processes.stopping_on_signals():
            try:
                self._run(port, no_run, assignments, check, no_live, live_policy_steps, policy)
            except child_processes.Stopped as stopped:
                self.stdout.write(f"\n{stopped}; the demo's processes are stopped")

    def _check_port(self, port: int) -> None:
        if child_processes.port_free("127.0.0.1", port):
            return
        holder = child_processes.port_holder(port)
        if holder is None:
            raise CommandError(f"port {port} is in use by another process; stop it or choose --port")
        hint = " (an earlier demo that did not stop cleanly)" if "webapp.asgi" in holder else ""
        raise CommandError(
            f"port {port} is held by {holder}{hint}; stop it with `kill {holder.split()[1].rstrip(':')}` "
            "or choose another port with --port"
        )

    def _run(
        self,
        port: int,
        no_run: bool,
        assignments: list[str],
        check: bool,
        no_live: bool,
        live_policy_steps: int | None,
        policy: LivePolicy | None,
    ) -> None:
        root = Path(settings.BASE_DIR)
        call_command("migrate", "--noinput", verbosity=0)
        call_command("seed_demo", stdout=self.stdout)
        if live_policy_steps is None:
            live_policy_steps = 0 if check else LIVE_POLICY_RUN["steps"]
        if live_policy_steps < 0:
            raise CommandError(f"--live-policy-steps={live_policy_steps}; accepted: 0 or more")
        live = (
            None
            if no_live
            else live_demo_setup(policy_steps=live_policy_steps, policy=policy, log=self.stdout.write)
        )
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
        # one-off, not watched: doing nothing played once on each day of the live env, so the
        # session form lists its days with their difficulty (cached; days already played skipped)
        one_off = (
            []
            if live is None or check
            else [
                self._start(
                    root,
                    "day_difficulty",
                    [sys.executable, "manage.py", "day_difficulty", "--quiet", live.env],
                )
            ]
        )
        try:
            url = f"http://127.0.0.1:{port}/"
            self._wait_for_web(url, children[0])
            run = None if no_run else self._launch(assignments)
            self.stdout.write(self.style.SUCCESS(f"\nGridACE is running at {url}"))
            self.stdout.write(
                "log in as engineer (training runs), reviewer (review queue), operator (live console) "
                "or admin (users, roles, lockouts)"
            )
            if run is not None:
                self.stdout.write(f"demo run {run.pk}: {url}runs/{run.pk}/")
            if live is not None:
                console = url.rstrip("/") + reverse("operations:console", args=[live.pk])
                self.stdout.write(
                    f"live session {live.pk} ({live.env}, {live.scenario_name}, one step every "
                    f"{live.speed_seconds:g} s): {console}"
                )
            if check:
                self._wait_until_started(run)
                self._wait_until_moving(live)
                self.stdout.write(
                    "check passed: the site answers, the worker started the run, the grid moves"
                )
                return
            self.stdout.write(
                "Ctrl-C (or SIGTERM, SIGHUP) stops the server, the workers, the live feed and the watchdog."
            )
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            dead = [child.args[2] for child in children if child.poll() is not None]
            raise CommandError(f"a demo process stopped unexpectedly: {dead}; see its output above")
        except KeyboardInterrupt:
            self.stdout.write("\nstopping…")
        finally:
            child_processes.stop(children + one_off)

    def _start(self, root: Path, name: str, command: list[str]) -> subprocess.Popen:
        return child_processes.start(command, cwd=root)

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
        active = TrainingRun.objects.filter(label=DEMO_RUN_LABEL, status__in=ACTIVE_STATUSES).first()
        if active is not None and not assignments:
            return active  # the previous demo's run, queued again when its worker stopped
        engineer = get_user_model().objects.get(username="engineer")
        try:
            config = TrainConfig.from_dict({**DEMO_RUN, **parse_assignments(assignments)})
            return run_launch(config=config, launched_by=engineer, label=DEMO_RUN_LABEL)
        except ConfigError as error:
            raise CommandError(str(error)) from error

    def _wait_until_started(self, run: TrainingRun | None, timeout: float = 120) -> None:
        if run is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status != JobStatus.QUEUED:
                if run.status == JobStatus.FAILED:
                    raise CommandError(f"the demo run failed: {run.error}")
                return
            time.sleep(0.3)
        raise CommandError(f"no worker started the demo run within {timeout:g} s")

    def _wait_until_moving(self, session: LiveSession | None, timeout: float = 120) -> None:
        """Until the live feed records a step after the one the session was at (a new session's
        first step, or the next one of a session resumed from an earlier demo)."""
        if session is None:
            return
        started_at = session.current_step
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            session.refresh_from_db()
            if session.status == SessionStatus.FAILED:
                raise CommandError(f"the demo live session failed: {session.end_reason}")
            if session.current_step > max(started_at, 0):
                return
            time.sleep(0.3)
        raise CommandError(f"the live feed did not step the demo live session within {timeout:g} s")
