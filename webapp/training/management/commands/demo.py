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

``--check`` stops once the page answers, the worker has started the run and the live feed has
stepped the live session: a smoke test of the set-up (with a freshly initialised live policy
unless ``--live-policy-steps`` says otherwise).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import CheckpointEvent, EpisodeEvent, MemorySink, MetricsEvent
from webapp import children as child_processes
from webapp.audit.services import audit_record
from webapp.operations.models import LIVE_STATUSES, LiveSession, SessionStatus
from webapp.operations.services import session_start
from webapp.training.errors import RunStateError
from webapp.training.management.commands.launch_run import parse_assignments
from webapp.training.models import ACTIVE_STATUSES, Deployment, RunStatus, TrainingRun
from webapp.training.selectors import deployment_current
from webapp.training.services import events as event_services
from webapp.training.services.deployment import checkpoint_deploy
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

LIVE_POLICY_RUN = {
    "env": "rte_case14_realistic",
    "steps": 3000,
    "learning_starts": 64,
    "batch_size": 64,
    "log_every": 250,
    "checkpoint_every": 3000,
}
"""the live console's policy when nothing is deployed: plain SAC, ~20-40 s of training here"""
LIVE_POLICY_LABEL = "demo live policy"
LIVE_SESSION_LABEL = "demo"
LIVE_SCENARIO = 4
"""a day of rte_case14_realistic that doing nothing survives with lines above 90% for hours and a
few overloads: alarms and recommendations to look at (a test episode: the policy never trained on
it). Another deployed env starts at its first scenario."""
LIVE_SPEED_SECONDS = 2.0


def live_policy_ensure(*, engineer: AbstractBaseUser, steps: int, log=print) -> Deployment:
    """The deployed policy, or when none is: the demo's own (trained once, then reused), deployed.

    ``steps`` > 0 trains SAC for that many steps (in this process, before the servers start);
    0 saves freshly initialised weights (seconds; the recommendations are then arbitrary)."""
    deployment = deployment_current()
    if deployment is not None:
        return deployment
    for run in TrainingRun.objects.filter(label=LIVE_POLICY_LABEL, status=RunStatus.SUCCEEDED).order_by(
        "-id"
    ):
        checkpoint = run.checkpoints.order_by("-id").first()
        if checkpoint is None:
            continue
        try:
            return checkpoint_deploy(
                checkpoint=checkpoint, user=engineer, comment="demo: the live console's policy"
            )
        except RunStateError:  # its file is gone (var/ cleaned): train another
            continue
    run = _live_policy_train(engineer=engineer, steps=steps, log=log)
    return checkpoint_deploy(
        checkpoint=run.checkpoints.order_by("-id").first(),
        user=engineer,
        comment="demo: the live console's policy",
    )


def _live_policy_train(*, engineer: AbstractBaseUser, steps: int, log) -> TrainingRun:
    """Train (or initialise) the policy, then record it as a succeeded run with its metrics,
    episodes and checkpoint, in one transaction: an interrupted demo leaves no half-made run."""
    from ace_core.live import untrained_policy
    from ace_core.train import train

    config = TrainConfig.from_dict({**LIVE_POLICY_RUN, "steps": max(steps, 1)}).validate()
    runs_dir = Path(settings.GRIDACE_RUNS_DIR)
    runs_dir.mkdir(parents=True, exist_ok=True)
    out_dir = Path(tempfile.mkdtemp(prefix="demo-live-policy-", dir=runs_dir))
    started = timezone.now()
    if steps > 0:
        log(f"training the live console's policy: {steps} steps of SAC on {config.env} (once)…")
        sink = MemorySink()
        train(config, sink, out_dir)
        events = sink.events
    else:
        log(f"live console's policy: freshly initialised weights for {config.env} (no training)")
        path = untrained_policy(config.env, out_dir / "checkpoint.pt", hidden=config.sac.hidden)
        events = [CheckpointEvent(step=0, path=str(path))]
    recorders = {
        MetricsEvent: event_services.metrics_record,
        EpisodeEvent: event_services.episode_record,
        CheckpointEvent: event_services.checkpoint_record,
    }
    with transaction.atomic():
        run = TrainingRun.objects.create(
            label=LIVE_POLICY_LABEL if steps > 0 else f"{LIVE_POLICY_LABEL} (untrained)",
            config=config.to_dict(),
            env=config.env,
            total_steps=config.steps if steps > 0 else 0,
            status=RunStatus.SUCCEEDED,
            launched_by=engineer,
            out_dir=str(out_dir),
            started_at=started,
            finished_at=timezone.now(),
        )
        for event in events:
            record = recorders.get(type(event))
            if record is not None:
                record(run_id=run.pk, event=event)
        audit_record(
            actor=engineer,
            action="run.launch",
            target=run,
            after={"config": run.config, "label": run.label, "trained_by": "manage.py demo", "steps": steps},
        )
    run.refresh_from_db()  # the recorders advanced progress_step in the database
    return run


def live_session_ensure(*, engineer: AbstractBaseUser) -> LiveSession:
    """The demo's live session: the one still running or paused (a restarted live feed resumes it
    where it stopped), else a new one of the deployed policy's env."""
    session = (
        LiveSession.objects.filter(label=LIVE_SESSION_LABEL, status__in=LIVE_STATUSES).order_by("-id").first()
    )
    if session is not None:
        return session
    deployment = deployment_current()
    scenario = LIVE_SCENARIO if deployment and deployment.checkpoint.run.env == LIVE_POLICY_RUN["env"] else 0
    return session_start(
        user=engineer,
        scenario_index=scenario,
        seed=0,
        k=3,
        speed_seconds=LIVE_SPEED_SECONDS,
        label=LIVE_SESSION_LABEL,
    )


def live_demo_setup(*, policy_steps: int, log=print) -> LiveSession:
    """What an operator finds on logging in: a deployed policy and a live session moving one step
    every ``LIVE_SPEED_SECONDS`` (the live feed started by the demo steps it). Idempotent."""
    engineer = get_user_model().objects.get(username="engineer")
    live_policy_ensure(engineer=engineer, steps=policy_steps, log=log)
    return live_session_ensure(engineer=engineer)


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

    def handle(
        self,
        *args: Any,
        port: int,
        no_run: bool,
        assignments: list[str],
        check: bool,
        no_live: bool,
        live_policy_steps: int | None,
        **options: Any,
    ) -> None:
        self._check_port(port)
        with child_processes.stopping_on_signals():
            try:
                self._run(port, no_run, assignments, check, no_live, live_policy_steps)
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
    ) -> None:
        root = Path(settings.BASE_DIR)
        call_command("migrate", "--noinput", verbosity=0)
        call_command("seed_demo", stdout=self.stdout)
        if live_policy_steps is None:
            live_policy_steps = 0 if check else LIVE_POLICY_RUN["steps"]
        if live_policy_steps < 0:
            raise CommandError(f"--live-policy-steps={live_policy_steps}; accepted: 0 or more")
        live = None if no_live else live_demo_setup(policy_steps=live_policy_steps, log=self.stdout.write)
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
            child_processes.stop(children)

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
            if run.status != RunStatus.QUEUED:
                if run.status == RunStatus.FAILED:
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
