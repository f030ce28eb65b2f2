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

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
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
from ace_core.errors import AceError, ConfigError
from ace_core.events import CheckpointEvent, EpisodeEvent, MemorySink, MetricsEvent
from webapp import children as child_processes
from webapp.audit.services import audit_record
from webapp.jobs.models import ACTIVE_STATUSES, JobStatus
from webapp.operations.models import LIVE_STATUSES, LiveSession, SessionStatus
from webapp.operations.selectors import first_test_scenario
from webapp.operations.services import session_control, session_start
from webapp.training.errors import RunStateError
from webapp.training.management.commands.launch_run import parse_assignments
from webapp.training.models import Deployment, TrainingRun
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
"""The live session plays the env's first test scenario (:func:`first_test_scenario`): a day the
policy never trained on. On rte_case14_realistic that is scenario 4, a day that doing nothing
survives with lines above 90% for hours and a few overloads: alarms and recommendations to look at."""
LIVE_SPEED_SECONDS = 2.0


@dataclass(frozen=True)
class LivePolicy:
    """A policy trained beforehand (``--live-policy``), checked: its file, settings and env."""

    source: str
    """the path as given"""
    path: Path
    config: TrainConfig


def live_policy_ensure(*, engineer: AbstractBaseUser, steps: int, log=print) -> Deployment:
    """The deployed policy, or when none is: the demo's own (trained once, then reused), deployed.

    ``steps`` > 0 trains SAC for that many steps (in this process, before the servers start);
    0 saves freshly initialised weights (seconds; the recommendations are then arbitrary)."""
    deployment = deployment_current()
    if deployment is not None:
        return deployment
    for run in TrainingRun.objects.filter(label=LIVE_POLICY_LABEL, status=JobStatus.SUCCEEDED).order_by(
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
    """Train (or initialise) the policy, then record it as a succeeded run."""
    from ace_core.live import untrained_policy
    from ace_core.training import run

    config = TrainConfig.from_dict({**LIVE_POLICY_RUN, "steps": max(steps, 1)}).validate()
    out_dir = _policy_dir()
    started = timezone.now()
    if steps > 0:
        log(f"training the live console's policy: {steps} steps of SAC on {config.env} (once)…")
        sink = MemorySink()
        run(config, out_dir, sink)
        events = sink.events
    else:
        log(f"live console's policy: freshly initialised weights for {config.env} (no training)")
        path = untrained_policy(config.env, out_dir / "checkpoint.pt", hidden=config.sac.hidden)
        events = [CheckpointEvent(step=0, path=str(path))]
    return _policy_record(
        engineer=engineer,
        label=LIVE_POLICY_LABEL if steps > 0 else f"{LIVE_POLICY_LABEL} (untrained)",
        config=config,
        total_steps=config.steps if steps > 0 else 0,
        out_dir=out_dir,
        started=started,
        events=events,
        origin={"steps": steps},
    )


def _policy_dir() -> Path:
    """A new folder of its own under the runs folder, for a policy the demo records."""
    runs_dir = Path(settings.GRIDACE_RUNS_DIR)
    runs_dir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="demo-live-policy-", dir=runs_dir))


def _policy_record(
    *,
    engineer: AbstractBaseUser,
    label: str,
    config: TrainConfig,
    total_steps: int,
    out_dir: Path,
    started: Any,
    events: list,
    origin: dict[str, Any],
) -> TrainingRun:
    """Record a policy made outside a worker as a succeeded run with its metrics, episodes and
    checkpoint (the last checkpoint event is the one deployed), audited as launched by
    ``manage.py demo``, in one transaction: an interrupted demo leaves no half-made run."""
    recorders = {
        MetricsEvent: event_services.metrics_record,
        EpisodeEvent: event_services.episode_record,
        CheckpointEvent: event_services.checkpoint_record,
    }
    with transaction.atomic():
        run = TrainingRun.objects.create(
            label=label[:100],
            config=config.to_dict(),
            env=config.env,
            total_steps=total_steps,
            status=JobStatus.SUCCEEDED,
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
            after={"config": run.config, "label": run.label, "trained_by": "manage.py demo", **origin},
        )
    run.refresh_from_db()  # the recorders advanced progress_step in the database
    return run


def live_policy_check(source: str) -> LivePolicy:
    """The policy at ``source`` (a checkpoint file or a run directory), loaded the way a live
    session loads it, on its own env (a few seconds for a 36-bus grid); a CommandError of one line
    that says what is wrong otherwise."""
    from ace_core.agents.sac import load_sac
    from ace_core.checkpoint import BEST_NAME, CHECKPOINT_NAME, load_checkpoint, policy_file
    from ace_core.grid.envs import make_env

    given = Path(source).expanduser()
    if not given.exists():
        raise CommandError(
            f"--live-policy {source}: no such file or directory; give a run directory or a checkpoint file"
        )
    path = policy_file(given)  # a run directory's best.pt, else its checkpoint.pt
    if not path.is_file():
        raise CommandError(
            f"--live-policy {source}: the directory holds no {BEST_NAME} or {CHECKPOINT_NAME}; "
            "give a run directory or a checkpoint file"
        )
    try:
        config = TrainConfig.from_dict(load_checkpoint(path)["config"])
        env = make_env(config.env, cache_chronics=False)  # the action space is all it needs
        try:
            load_sac(path, env)
        finally:
            env.close()
    except (AceError, KeyError, TypeError, ValueError, RuntimeError) as error:
        reason = f"it has no {error} entry" if isinstance(error, KeyError) else " ".join(str(error).split())
        raise CommandError(f"--live-policy {source}: the policy does not load: {reason}") from error
    return LivePolicy(source=source, path=path.resolve(), config=config)


def live_policy_deploy(*, engineer: AbstractBaseUser, policy: LivePolicy, log=print) -> Deployment:
    """Deploy ``policy``: recorded as a succeeded run (its file copied into a folder of its own)
    and deployed, replacing whatever was deployed; the deployment already in place when it is that
    same policy (a demo started again with the same ``--live-policy``)."""
    current = deployment_current()
    if (
        current is not None
        and Path(current.path).is_file()
        and filecmp.cmp(current.path, policy.path, shallow=False)
    ):
        return current
    log(f"live console's policy: {policy.source} ({policy.config.env})")
    out_dir = _policy_dir()
    copy = out_dir / "checkpoint.pt"
    shutil.copy2(policy.path, copy)
    run = _policy_record(
        engineer=engineer,
        label=f"{LIVE_POLICY_LABEL} ({policy.source})",
        config=policy.config,
        total_steps=0,
        out_dir=out_dir,
        started=timezone.now(),
        events=[CheckpointEvent(step=0, path=str(copy))],
        origin={"source": str(policy.path)},
    )
    return checkpoint_deploy(
        checkpoint=run.checkpoints.get(),
        user=engineer,
        comment=f"demo: the live console's policy, from {policy.path}"[:500],
    )


def live_session_ensure(*, engineer: AbstractBaseUser) -> LiveSession:
    """The demo's live session: the one still running or paused with the deployed policy (a
    restarted live feed resumes it where it stopped), else a new one of the deployed policy's env
    at its first test scenario (one of another policy is stopped first)."""
    deployment = deployment_current()
    session = (
        LiveSession.objects.filter(label=LIVE_SESSION_LABEL, status__in=LIVE_STATUSES).order_by("-id").first()
    )
    if session is not None:
        if deployment is None or session.deployment_id == deployment.pk:
            return session
        session_control(session_id=session.pk, user=engineer, command="stop")
    env = deployment.checkpoint.run.env if deployment is not None else ""
    return session_start(
        user=engineer,
        scenario_index=first_test_scenario(env) if env else 0,
        seed=0,
        k=3,
        speed_seconds=LIVE_SPEED_SECONDS,
        label=LIVE_SESSION_LABEL,
    )


def live_demo_setup(*, policy_steps: int, policy: LivePolicy | None = None, log=print) -> LiveSession:
    """What an operator finds on logging in: a deployed policy (``policy`` when given, see
    :func:`live_policy_deploy`) and a live session moving one step every ``LIVE_SPEED_SECONDS``
    (the live feed started by the demo steps it). Idempotent."""
    engineer = get_user_model().objects.get(username="engineer")
    if policy is not None:
        live_policy_deploy(engineer=engineer, policy=policy, log=log)
    else:
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
