"""Chaos: faults injected into a working platform, what each one loses and how long until
everything resumes.

Starts throwaway servers of its own in a temporary folder (a Postgres cluster made with
``initdb``, run as the ``postgres`` user when this runs as root, and a ``redis-server``, each on
a free port: the machine's shared servers are never touched), migrates, creates an engineer and
an operator, deploys a policy with random weights, starts a live session (1 s per step; the
next day's session when a day ends, or before a fault when less than ``--room`` seconds of it
are left) and a training run on l2rpn_case14_sandbox with the ``random-refine-14bus`` recipe (the
ACE loop without a language model: refinements, offline), then runs the platform's processes as children: daphne, ``db_worker``, ``live_feed`` and the
``watchdog``. The script is their supervisor: a child that exits, killed or crashed, is started
again after ``--restart-delay``, as ``restart: unless-stopped`` does in docker/compose.yaml.

While it runs, an operator takes a decision about every second (one per grid step at most):
through the HTTP API it accepts or rejects (alternately) the top card, or, on a step without
cards, applies "do nothing" as the console's Apply button does; a websocket client watches the session as the console does
(reconnecting with its back-off). Faults, in turn: ``kill -9`` of daphne, of the db_worker, of the
live feed, of the watchdog; a restart of Redis; a restart of Postgres (fast shutdown); every
database connection terminated (``pg_terminate_backend``, Postgres staying up: a failover or a
pooler restart). Around each fault it counts decisions, audit entries, refinements and
checkpoints (rows, and the checkpoint file on disk): lost = confirmed before the fault (a decision:
answered 200 by the server) and missing after. It measures the seconds from the fault until the
session steps again, the web answers, a decision is confirmed, the run records a training event
(a resumed attempt after a lost worker) and the console's socket receives a step. A session or
run the fault failed for good is reported, then replaced or resumed by hand for the next fault.
At the end it runs ``manage.py audit_verify``. Prints one JSON object (5-6 minutes on 2 busy cores).

    .venv/bin/python bench/chaos.py [--faults daphne,db_worker,...] [--restart-delay 1] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_fanout import ws_open, ws_read  # the minimal websocket client of the fan-out bench

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "gridace_chaos"
PASSWORD = "chaos-password-123"
CHILDREN = ("daphne", "db_worker", "live_feed", "watchdog")
FAULTS = ("daphne", "db_worker", "live_feed", "watchdog", "redis", "postgres", "connections")
"""``connections``: every connection of the platform to Postgres terminated, Postgres staying up
(what a failover or a connection pooler's restart does)"""
POLL_S = 0.25
RETRY_S = 0.2
"""the operator looks again this soon at a step closed to decisions (the grid is moving)"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():
                return
        time.sleep(POLL_S)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


# ----- the throwaway servers -----------------------------------------------------------------
class Servers:
    """A Postgres cluster and a Redis server of this bench, in ``root``, on free ports. As root,
    Postgres runs as the ``postgres`` user (initdb refuses root)."""

    def __init__(self, root: Path, logs: Path, restart_delay: float) -> None:
        self.root = root
        self.restart_delay = restart_delay
        self.pg_port, self.redis_port = free_port(), free_port()
        self.pg_dir = root / "postgres"
        self.pg_user = "postgres" if os.geteuid() == 0 else None
        self.pg: subprocess.Popen | None = None
        self.redis: subprocess.Popen | None = None
        self.log = open(logs / "servers.log", "a")  # noqa: SIM115 - closed in stop()

    def database_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.pg_port}/{DATABASE}"

    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def _pg_bin(self, name: str) -> str:
        found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
        if not found:
            found = [Path(p) for p in [shutil.which(name)] if p]
        if not found:
            raise SystemExit(f"no {name} found (/usr/lib/postgresql/*/bin or PATH); install postgresql")
        return str(found[-1])

    def pg_init(self) -> None:
        self.pg_dir.mkdir()
        if self.pg_user:
            shutil.chown(self.pg_dir, self.pg_user, self.pg_user)
        subprocess.run(
            [self._pg_bin("initdb"), "-D", str(self.pg_dir / "data"), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--no-sync"],
            check=True, stdout=self.log, stderr=subprocess.STDOUT, user=self.pg_user, group=self.pg_user,
        )  # fmt: skip

    def pg_start(self) -> None:
        self.pg = subprocess.Popen(
            [self._pg_bin("postgres"), "-D", str(self.pg_dir / "data"), "-p", str(self.pg_port),
             "-k", str(self.pg_dir), "-c", "listen_addresses=127.0.0.1"],
            stdout=self.log, stderr=subprocess.STDOUT, user=self.pg_user, group=self.pg_user,
            start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip
        wait_until(self._pg_ready, 60, "postgres to accept connections")

    def _pg_ready(self) -> bool:
        import psycopg

        with psycopg.connect(f"postgres://postgres@127.0.0.1:{self.pg_port}/postgres", connect_timeout=2):
            return True

    def pg_create_database(self) -> None:
        import psycopg

        url = f"postgres://postgres@127.0.0.1:{self.pg_port}/postgres"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")

    def pg_restart(self) -> None:
        """``pg_ctl restart -m fast``: SIGINT (fast shutdown: sessions ended, clean checkpoint)."""
        _stop_process(self.pg, signal.SIGINT)
        time.sleep(self.restart_delay)
        self.pg_start()

    def pg_terminate_connections(self) -> None:
        import psycopg

        url = f"postgres://postgres@127.0.0.1:{self.pg_port}/postgres"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                [DATABASE],
            )

    def redis_start(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", str(self.root)],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip
        wait_until(self._redis_ready, 30, "redis to answer PING")

    def _redis_ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")

    def redis_restart(self) -> None:
        """Shut Redis down (it keeps nothing: no persistence) and start it again on its port."""
        _stop_process(self.redis, signal.SIGTERM)
        time.sleep(self.restart_delay)
        self.redis_start()

    def stop(self) -> None:
        _stop_process(self.redis, signal.SIGTERM)
        _stop_process(self.pg, signal.SIGINT)
        self.log.close()


def _stop_process(process: subprocess.Popen | None, signum: int, grace: float = 20) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signum)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# ----- the platform's processes, supervised --------------------------------------------------
@dataclass
class Exit:
    child: str
    at: float
    code: int | None
    by_bench: bool


class Supervisor:
    """Runs the children, each in its own process group, and starts again (after
    ``restart_delay``) any that exits, as ``restart: unless-stopped`` does in docker/compose.yaml."""

    def __init__(self, commands: dict[str, list[str]], env: dict[str, str], logs: Path, restart_delay: float):
        self.commands = commands
        self.env = env
        self.logs = logs
        self.restart_delay = restart_delay
        self.procs: dict[str, subprocess.Popen] = {}
        self.exits: list[Exit] = []
        self.killing: set[str] = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def start_all(self) -> None:
        for name in self.commands:
            self._start(name)
        self.thread.start()

    def _start(self, name: str) -> None:
        log = open(self.logs / f"{name}.log", "a")  # noqa: SIM115 - the child holds it
        log.write(f"\n===== {time.strftime('%H:%M:%S')} start {name}\n")
        log.flush()
        self.procs[name] = subprocess.Popen(
            self.commands[name],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        log.close()

    def kill(self, name: str) -> None:
        """``kill -9`` of the child's process group; the watch loop starts it again."""
        with self.lock:
            self.killing.add(name)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.procs[name].pid, signal.SIGKILL)

    def _watch(self) -> None:
        while not self.stopping.wait(POLL_S):
            for name, process in list(self.procs.items()):
                if process.poll() is None:
                    continue
                with self.lock:
                    self.exits.append(Exit(name, time.monotonic(), process.returncode, name in self.killing))
                    self.killing.discard(name)
                if self.stopping.wait(self.restart_delay):
                    return
                with self.lock:
                    self._start(name)

    def crashes_since(self, since: float) -> list[str]:
        with self.lock:
            return [f"{e.child} (exit {e.code})" for e in self.exits if e.at >= since and not e.by_bench]

    def stop(self) -> None:
        from webapp import children

        self.stopping.set()
        self.thread.join(timeout=5)
        children.stop(list(self.procs.values()), grace_seconds=15)


# ----- the operator: a decision every second -------------------------------------------------
@dataclass
class Attempt:
    sent: float
    kind: str
    """read (the current step's cards) or decide"""
    outcome: str
    """answered (200), refused (4xx: a stale step, a conflict) or failed (5xx, no answer)"""
    seconds: float
    decision_id: int | None = None


@dataclass
class Holder:
    """The live session the operator and the console watch (a new one when a day ends)."""

    session_id: int
    port: int


class Operator:
    """Reads the current step's cards through the HTTP API (a token) every ``every`` seconds and
    decides once per step: accepts or rejects the top card (alternately) through the API, or,
    when the step has no card, applies "do nothing" as the console's Apply button does (its
    session cookie and CSRF token). A decision is confirmed when the server answers 200 with it."""

    def __init__(self, holder: Holder, token: str, cookie: str, every: float) -> None:
        self.holder = holder
        self.token = token
        self.csrf = secrets.token_hex(16)  # the cookie's secret, repeated in the header
        self.cookie = f"sessionid={cookie}; csrftoken={self.csrf}"
        self.every = every
        self.attempts: list[Attempt] = []
        self.refusals: collections.Counter[str] = collections.Counter()
        """why decisions were refused (numbers masked)"""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="operator", daemon=True)
        self._decided: tuple[int, int] | None = None

    def _request(self, path: str, body: dict | None = None, *, api: bool = True) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if api:
            headers["Authorization"] = f"Bearer {self.token}"
        else:
            headers.update({"Cookie": self.cookie, "X-CSRFToken": self.csrf})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.holder.port}{'/api/v1' if api else ''}{path}",
            method="GET" if body is None else "POST",
            data=json.dumps(body).encode() if body is not None else None,
            headers=headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with contextlib.suppress(OSError, ValueError):
                return error.code, json.loads(error.read())
            return error.code, None
        except (OSError, ValueError):
            return 0, None

    def _record(self, sent: float, kind: str, status: int, decision_id: int | None = None) -> None:
        outcome = "answered" if status == 200 else "refused" if 400 <= status < 500 else "failed"
        with self.lock:
            self.attempts.append(Attempt(sent, kind, outcome, time.monotonic() - sent, decision_id))

    def _tick(self, number: int) -> bool:
        """One try; False when the step was closed to decisions or already decided."""
        session_id = self.holder.session_id
        sent = time.monotonic()
        status, recs = self._request(f"/sessions/{session_id}/recommendations")
        self._record(sent, "read", status)
        if status != 200:
            return True
        if not recs["decisions_open"] or self._decided == (session_id, recs["step"]):
            return False
        step = recs["step"]
        sent = time.monotonic()
        if recs["items"]:
            card = recs["items"][0]
            decision = "accept" if number % 2 == 0 and not card["error"] else "reject"
            path = f"/sessions/{session_id}/recommendations/{card['id']}/decision"
            status, made = self._request(path, {"decision": decision, "step": step, "comment": "chaos"})
        else:
            body = {"step": step, "action": {"kind": "nothing"}, "comment": "chaos"}
            status, made = self._request(f"/live/{session_id}/apply/", body, api=False)
            made = made["decision"] if status == 200 else made
        self._decided = (session_id, step)
        if status == 200:
            self._record(sent, "decide", status, made["id"])
        else:
            self._record(sent, "decide", status)
            reason = (made or {}).get("error") or f"HTTP {status}"
            with self.lock:
                self.refusals[re.sub(r"\d+", "N", reason)[:90]] += 1
        return True

    def _loop(self) -> None:
        number, wait = 0, self.every
        while not self.stop.wait(wait):
            # the grid moves on: look again soon when this step could not be decided
            wait = self.every if self._tick(number) else RETRY_S
            number += 1

    def confirmed_ids(self) -> list[int]:
        with self.lock:
            return [a.decision_id for a in self.attempts if a.decision_id]

    def first_after(self, since: float, kind: str) -> float | None:
        """When the first request of ``kind`` sent after ``since`` was answered with 200."""
        with self.lock:
            return next(
                (
                    a.sent
                    for a in self.attempts
                    if a.sent >= since and a.kind == kind and a.outcome == "answered"
                ),
                None,
            )

    def latency_ms(self, kind: str) -> dict[str, float]:
        """p50 and p95 of the answered requests of ``kind``."""
        with self.lock:
            took = sorted(
                a.seconds * 1000 for a in self.attempts if a.kind == kind and a.outcome == "answered"
            )
        if not took:
            return {}
        return {
            q: round(took[min(len(took) - 1, int(p * len(took)))]) for q, p in (("p50", 0.5), ("p95", 0.95))
        }

    def outcomes_between(self, start: float, end: float) -> dict[str, int]:
        """The decisions tried in this window, by outcome."""
        with self.lock:
            window = [a.outcome for a in self.attempts if start <= a.sent < end and a.kind == "decide"]
        return {kind: window.count(kind) for kind in ("answered", "refused", "failed")}


# ----- the console: a websocket on the session, reconnecting as live_socket.js does ---------
class Console:
    def __init__(self, holder: Holder, cookie: str) -> None:
        self.holder = holder
        self.cookie = cookie
        self.steps: list[float] = []
        self.connects = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="console", daemon=True)

    async def _main(self) -> None:
        delay = 0.5
        while not self.stop.is_set():
            session_id = self.holder.session_id
            try:
                reader, writer = await asyncio.wait_for(
                    ws_open(self.holder.port, f"/ws/live/{session_id}/", self.cookie), 10
                )
            except Exception:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 15.0)  # the console's back-off
                continue
            delay = 0.5
            self.connects += 1
            reading = asyncio.create_task(self._read(reader, writer))
            while not reading.done() and not self.stop.is_set() and self.holder.session_id == session_id:
                await asyncio.sleep(POLL_S)
            reading.cancel()
            with contextlib.suppress(BaseException):
                await reading
            writer.close()
            if self.holder.session_id == session_id:
                await asyncio.sleep(delay)

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while (text := await ws_read(reader, writer)) is not None:
                if text.startswith('{"kind":"step"'):
                    self.steps.append(time.monotonic())

    def first_step_after(self, since: float) -> float | None:
        return next((t for t in list(self.steps) if t >= since), None)


# ----- what the database holds ---------------------------------------------------------------
def with_database(query, timeout: float = 120):
    """``query()``, retried while the database is away (a restart): reconnects each time."""
    from django.db import InterfaceError, OperationalError, connection

    deadline = time.monotonic() + timeout
    while True:
        try:
            return query()
        except (OperationalError, InterfaceError):
            if time.monotonic() > deadline:
                raise
            with contextlib.suppress(Exception):
                connection.close()
            time.sleep(POLL_S)


def marks(run_id: int) -> dict[str, int]:
    """The newest row ids: anything above them was written after this moment."""
    from django.db.models import Max

    from webapp.operations.models import SessionStep
    from webapp.review.models import Refinement
    from webapp.training.models import Checkpoint, EpisodeRecord, MetricPoint

    def newest(model, **filters) -> int:
        return model.objects.filter(**filters).aggregate(m=Max("id"))["m"] or 0

    return {
        "step": newest(SessionStep),
        "metric": newest(MetricPoint, run_id=run_id),
        "episode": newest(EpisodeRecord, run_id=run_id),
        "checkpoint": newest(Checkpoint, run_id=run_id),
        "refinement": newest(Refinement, run_id=run_id),
    }


def counts(run_id: int, session_id: int, confirmed: list[int]) -> dict[str, Any]:
    from django.db.models import F, Max

    from webapp.audit.models import AuditEntry
    from webapp.operations.models import LIVE_STATUSES, Decision, DecisionStatus, LiveSession
    from webapp.review.models import Refinement
    from webapp.training.models import Checkpoint, TrainingRun

    run = TrainingRun.objects.get(pk=run_id)
    session = LiveSession.objects.get(pk=session_id)
    checkpoints = Checkpoint.objects.filter(run_id=run_id)
    decision_audits = AuditEntry.objects.filter(
        action__in=["live.recommendation.accept", "live.recommendation.reject", "live.action.apply"],
        target_type="operations.decision",
        target_id__in=[str(pk) for pk in confirmed],
    )
    return {
        "decisions_confirmed": len(confirmed),
        "decisions_found": Decision.objects.filter(id__in=confirmed).count(),
        "decisions_audited": decision_audits.count(),
        "decisions_unsettled": Decision.objects.filter(
            status=DecisionStatus.PENDING,
            session__status__in=LIVE_STATUSES,
            step__lt=F("session__current_step"),
        ).count(),
        "audit_entries": AuditEntry.objects.count(),
        "audit_max_id": AuditEntry.objects.aggregate(m=Max("id"))["m"] or 0,
        "refinements": Refinement.objects.filter(run_id=run_id).count(),
        "refinement_max_id": Refinement.objects.filter(run_id=run_id).aggregate(m=Max("id"))["m"] or 0,
        "checkpoints": checkpoints.count(),
        "checkpoint_max_id": checkpoints.aggregate(m=Max("id"))["m"] or 0,
        "checkpoint_latest_step": checkpoints.order_by("-id").values_list("step", flat=True).first(),
        "checkpoint_file_on_disk": (Path(run.out_dir) / "checkpoint.pt").is_file(),
        "session": session.pk,
        "session_status": session.status,
        "session_step": session.current_step,
        "run_status": run.status,
        "run_attempt": run.attempt,
        "run_progress_step": run.progress_step,
    }


def lost(before: dict[str, Any], run_id: int, confirmed_before: list[int]) -> dict[str, int]:
    """Rows that existed (decisions: that the server confirmed) before the fault and are gone."""
    from webapp.audit.models import AuditEntry
    from webapp.operations.models import Decision
    from webapp.review.models import Refinement
    from webapp.training.models import Checkpoint

    def kept(model, max_id: int, **filters) -> int:
        return model.objects.filter(id__lte=max_id, **filters).count()

    return {
        "decisions": len(confirmed_before) - Decision.objects.filter(id__in=confirmed_before).count(),
        "audit_entries": before["audit_entries"] - kept(AuditEntry, before["audit_max_id"]),
        "refinements": before["refinements"] - kept(Refinement, before["refinement_max_id"], run_id=run_id),
        "checkpoints": before["checkpoints"] - kept(Checkpoint, before["checkpoint_max_id"], run_id=run_id),
    }


def training_moved(run_id: int, since: dict[str, int]) -> bool:
    from webapp.review.models import Refinement
    from webapp.training.models import Checkpoint, EpisodeRecord, MetricPoint

    return any(
        model.objects.filter(run_id=run_id, id__gt=since[key]).exists()
        for model, key in (
            (MetricPoint, "metric"),
            (EpisodeRecord, "episode"),
            (Checkpoint, "checkpoint"),
            (Refinement, "refinement"),
        )
    )


def session_moved(since: dict[str, int]) -> bool:
    from webapp.operations.models import SessionStep

    return SessionStep.objects.filter(id__gt=since["step"]).exists()


# ----- set-up --------------------------------------------------------------------------------
@dataclass
class Platform:
    run_id: int
    engineer: Any
    token: str
    cookie: str
    scenario: int = 0
    lengths: list[int] = field(default_factory=list)
    """steps of each scenario a session can play"""
    speed: float = 1.0
    sessions: list[int] = field(default_factory=list)


def platform_setup(args: argparse.Namespace, var_dir: Path) -> Platform:
    """Migrate, create the users, a token and a login, deploy a random policy, launch the run."""
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client as DjangoClient

    from ace_core.grid.envs import make_env
    from ace_core.live import live_scenarios, untrained_policy
    from ace_core.training.recipes import recipe_get
    from webapp.accounts.services import role_groups_sync, user_create_with_role
    from webapp.api.services import token_create
    from webapp.jobs.models import JobStatus
    from webapp.training.models import Checkpoint, TrainingRun
    from webapp.training.services.deployment import checkpoint_deploy
    from webapp.training.services.runs import run_launch

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)
    role_groups_sync()
    engineer = user_create_with_role(username="chaos-engineer", password=PASSWORD, role="engineer")
    operator = user_create_with_role(username="chaos-operator", password=PASSWORD, role="operator")
    _, token = token_create(user=operator, name="chaos bench")
    client = DjangoClient()
    client.force_login(operator)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value

    policy_run = TrainingRun.objects.create(
        config={}, env=args.env, total_steps=1, status=JobStatus.SUCCEEDED, launched_by=engineer,
        out_dir=str(var_dir / "policy"), label="chaos live policy",
    )  # fmt: skip
    policy = untrained_policy(args.env, var_dir / "policy" / "checkpoint.pt", hidden=32)
    checkpoint = Checkpoint.objects.create(run=policy_run, step=1, path=str(policy))
    checkpoint_deploy(checkpoint=checkpoint, user=engineer)
    config = recipe_get("random-refine-14bus").config(
        env=args.env,
        steps=args.steps,
        checkpoint_every=args.checkpoint_every,
        log_every=args.log_every,
        llm_budget=1_000_000,  # refinements all along the bench, not only the recipe's first 300
    )
    run = run_launch(config=config, launched_by=engineer, label="chaos")
    platform = Platform(
        run.pk,
        engineer,
        token,
        cookie,
        lengths=[s.length for s in live_scenarios(make_env(args.env))],
        speed=args.speed,
    )
    session_next(platform)
    return platform


def session_next(platform: Platform) -> int:
    """Start the next scenario's session (the operator moves to it)."""
    from webapp.operations.services import session_start

    session = session_start(
        user=platform.engineer,
        scenario_index=platform.scenario % len(platform.lengths),
        speed_seconds=platform.speed,
        label="chaos",
    )
    platform.scenario += 1
    platform.sessions.append(session.pk)
    return session.pk


def session_keep_live(platform: Platform, holder: Holder) -> None:
    """A session that reached the end of its day (or a game over: the grid's doing, not the
    platform's) is followed by the next one. A failed one is left as it is: a fault's outcome."""
    from webapp.operations.models import LiveSession, SessionStatus

    status = LiveSession.objects.values_list("status", flat=True).get(pk=holder.session_id)
    if status == SessionStatus.FINISHED:
        holder.session_id = session_next(platform)


def ended_by_fault(bench: Bench) -> dict[str, str]:
    """What the fault ended for good (a failed session, a failed run), then started again as a
    person would (a new session, the run resumed), so the next fault meets a working platform."""
    from webapp.jobs.models import JobStatus
    from webapp.operations.models import LiveSession, SessionStatus
    from webapp.training.models import TrainingRun
    from webapp.training.services.runs import run_resume

    ended = {}
    session = LiveSession.objects.get(pk=bench.holder.session_id)
    if session.status == SessionStatus.FAILED:
        ended["session"] = session.end_reason
        bench.holder.session_id = session_next(bench.platform)
    run = TrainingRun.objects.get(pk=bench.platform.run_id)
    if run.status == JobStatus.FAILED:
        ended["run"] = run.error
        run_resume(run=run, user=bench.platform.engineer, reason="chaos bench: resumed by hand")
    return ended


def session_with_room(bench: Bench) -> None:
    """A session that will not reach the end of its day during the next fault (``--room``
    seconds of steps left): otherwise it is stopped and the next day's session started."""
    from webapp.operations.models import LiveSession
    from webapp.operations.services import session_control

    session = LiveSession.objects.get(pk=bench.holder.session_id)
    left = bench.platform.lengths[session.scenario_index] - session.current_step
    if session.is_live and left * session.speed_seconds >= bench.args.room:
        return
    if session.is_live:
        session_control(session_id=session.pk, user=bench.platform.engineer, command="stop")
    bench.holder.session_id = session_next(bench.platform)
    wait_until(lambda: session_started(bench.holder.session_id), 120, "the next session to step")


def web_ready(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as response:
        return response.status == 200


def run_has_checkpoint(run_id: int) -> bool:
    from webapp.training.models import Checkpoint

    return Checkpoint.objects.filter(run_id=run_id).exists()


def session_started(session_id: int) -> bool:
    from webapp.operations.models import LiveSession

    return LiveSession.objects.get(pk=session_id).current_step >= 1


# ----- one fault -----------------------------------------------------------------------------
@dataclass
class Bench:
    args: argparse.Namespace
    servers: Servers
    supervisor: Supervisor
    platform: Platform
    holder: Holder
    operator: Operator
    console: Console
    started: float


def inject(bench: Bench, fault: str) -> str:
    if fault in CHILDREN:
        bench.supervisor.kill(fault)
        return f"kill -9 {fault}; started again after {bench.args.restart_delay:g} s"
    if fault == "redis":
        bench.servers.redis_restart()
        return f"redis restarted (shut down, started again after {bench.args.restart_delay:g} s)"
    if fault == "connections":
        bench.servers.pg_terminate_connections()
        return "every connection to postgres terminated (pg_terminate_backend), postgres up"
    bench.servers.pg_restart()
    return f"postgres restarted (fast shutdown, started again after {bench.args.restart_delay:g} s)"


def seconds(moment: float | None, since: float) -> float | None:
    return None if moment is None else round(moment - since, 1)


def resume_times(bench: Bench, injected: float, since: dict[str, int]) -> dict[str, float | None]:
    """Seconds from the fault until each part works again (None: not within --fault-timeout)."""
    run_id = bench.platform.run_id
    found: dict[str, float | None] = {"session": None, "training": None}
    deadline = injected + bench.args.fault_timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            with_database(lambda: session_keep_live(bench.platform, bench.holder), timeout=5)
            if found["session"] is None and with_database(lambda: session_moved(since), timeout=5):
                found["session"] = time.monotonic()
            if found["training"] is None and with_database(lambda: training_moved(run_id, since), timeout=5):
                found["training"] = time.monotonic()
        answered = bench.operator.first_after(injected, "read")
        decided = bench.operator.first_after(injected, "decide")
        watched = bench.console.first_step_after(injected)
        if None not in (found["session"], found["training"], answered, decided, watched):
            break
        time.sleep(POLL_S)
    found.update(web=answered, decisions=decided, socket=watched)
    return {part: seconds(moment, injected) for part, moment in found.items()}


def redone(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Training steps played again: those after the last checkpoint, when a new attempt resumed
    from it (at least: the run moved on between the count and the fault)."""
    if after["run_attempt"] == before["run_attempt"]:
        return 0
    return before["run_progress_step"] - (before["checkpoint_latest_step"] or 0)


def fault_run(bench: Bench, fault: str) -> dict[str, Any]:
    run_id = bench.platform.run_id
    with_database(lambda: session_with_room(bench))
    confirmed = bench.operator.confirmed_ids()
    before = with_database(lambda: counts(run_id, bench.holder.session_id, confirmed))
    since = with_database(lambda: marks(run_id))
    injected = time.monotonic()
    what = inject(bench, fault)
    resumed = resume_times(bench, injected, since)
    time.sleep(bench.args.settle)
    after = with_database(lambda: counts(run_id, bench.holder.session_id, confirmed))
    return {
        "fault": what,
        "at_s": round(injected - bench.started, 1),
        "lost": with_database(lambda: lost(before, run_id, confirmed)),
        "resume_seconds": resumed,
        "failed_for_good": with_database(lambda: ended_by_fault(bench)),
        "training_steps_redone": redone(before, after),
        "crashed_and_restarted": bench.supervisor.crashes_since(injected),
        "decision_requests": bench.operator.outcomes_between(injected, time.monotonic()),
        "before": before,
        "after": after,
    }


def audit_verify(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "manage.py", "audit_verify"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    said = done.stdout.strip() or done.stderr.strip()
    return {"exit_status": done.returncode, "output": said.splitlines()[-1] if said else ""}


# ----- main ----------------------------------------------------------------------------------
def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="l2rpn_case14_sandbox", help="grid of the session and the run")
    parser.add_argument("--speed", type=float, default=1.0, help="seconds between two grid steps")
    parser.add_argument("--decide-every", type=float, default=1.0, help="seconds between two decisions")
    parser.add_argument("--steps", type=int, default=2_000_000, help="training steps (never reached)")
    parser.add_argument("--checkpoint-every", type=int, default=3_000)
    parser.add_argument("--log-every", type=int, default=500)
    parser.add_argument("--restart-delay", type=float, default=1.0, help="seconds before a restart")
    parser.add_argument("--fault-timeout", type=float, default=150.0, help="longest wait for a resume")
    parser.add_argument("--room", type=float, default=75.0, help="seconds of steps a session needs left")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the resume, then count")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of decisions before the faults")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"in order, among {','.join(FAULTS)}")
    parser.add_argument("--logs", default="", help="keep the children's logs in this folder")
    args = parser.parse_args()
    unknown = sorted(set(args.faults.split(",")) - set(FAULTS))
    if unknown:
        parser.error(f"--faults: unknown {unknown}; accepted: {', '.join(FAULTS)}")
    return args


def child_commands(web_port: int) -> dict[str, list[str]]:
    python = sys.executable
    return {
        "daphne": [python, "-m", "daphne", "-b", "127.0.0.1", "-p", str(web_port), "webapp.asgi:application"],
        "db_worker": [python, "manage.py", "db_worker", "--queue-name", "training,default", "--no-reload",
                      "--no-startup-delay", "--interval", "0.5"],
        "live_feed": [python, "manage.py", "live_feed"],
        "watchdog": [python, "manage.py", "watchdog"],
    }  # fmt: skip


def main() -> None:
    args = arguments()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="gridace-chaos-"))
    root.chmod(0o755)  # the postgres user reaches its folder inside
    logs = Path(args.logs).resolve() if args.logs else root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    servers = Servers(root, logs, args.restart_delay)
    supervisor: Supervisor | None = None
    threads: list[Operator | Console] = []
    sys.path.insert(0, str(ROOT))
    from webapp import children

    try:
        with children.stopping_on_signals():
            servers.pg_init()
            servers.pg_start()
            servers.pg_create_database()
            servers.redis_start()
            env = {
                **os.environ,
                "DATABASE_URL": servers.database_url(),
                "REDIS_URL": servers.redis_url(),
                "CHANNEL_LAYER_PREFIX": "gridace-chaos",
                "DJANGO_SETTINGS_MODULE": "webapp.settings",
                "GRIDACE_VAR_DIR": str(root / "var"),
                "LIVE_RELAY_FROM_DB": "0",
                "PYTHONUNBUFFERED": "1",
            }
            os.environ.update(env)
            import django

            django.setup()
            from django.conf import settings

            platform = platform_setup(args, root / "var")
            web_port = free_port()
            holder = Holder(platform.sessions[-1], web_port)
            supervisor = Supervisor(child_commands(web_port), env, logs, args.restart_delay)
            supervisor.start_all()
            wait_until(lambda: web_ready(web_port), 120, "daphne to answer")
            wait_until(lambda: session_started(holder.session_id), 180, "the live session to step")
            wait_until(lambda: run_has_checkpoint(platform.run_id), 300, "the run's first checkpoint")
            operator = Operator(holder, platform.token, platform.cookie, args.decide_every)
            console = Console(holder, platform.cookie)
            threads = [operator, console]
            for part in threads:
                part.thread.start()
            time.sleep(args.warmup)
            bench = Bench(args, servers, supervisor, platform, holder, operator, console, started)
            setup_s = round(time.monotonic() - started, 1)
            faults = [fault_run(bench, fault) for fault in args.faults.split(",")]
            confirmed = operator.confirmed_ids()
            final = with_database(lambda: counts(platform.run_id, holder.session_id, confirmed))
            figures = {
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "settings": {
                    "session_step_s": args.speed,
                    "decide_every_s": args.decide_every,
                    "restart_delay_s": args.restart_delay,
                    "heartbeat_s": settings.GRIDACE_HEARTBEAT_SECONDS,
                    "run_stale_after_s": settings.GRIDACE_STALE_AFTER_SECONDS,
                    "watchdog_interval_s": max(1.0, settings.GRIDACE_STALE_AFTER_SECONDS / 3),
                    "live_stale_after_s": settings.GRIDACE_LIVE_STALE_SECONDS,
                },
                "setup_s": setup_s,
                "faults": faults,
                "final": final,
                "decision_requests": operator.outcomes_between(0, time.monotonic()),
                "request_ms": {kind: operator.latency_ms(kind) for kind in ("read", "decide")},
                "refusal_reasons": dict(operator.refusals.most_common(4)),
                "console_connects": console.connects,
                "sessions_played": len(platform.sessions),
                "audit_verify": audit_verify(env),
                "wall_s": round(time.monotonic() - started, 1),
                "load_average_1min_at_end": round(os.getloadavg()[0], 1),
            }
            print(json.dumps(figures, indent=2))
    except (KeyboardInterrupt, children.Stopped) as stop:
        print(f"chaos bench interrupted ({str(stop) or 'Ctrl-C'}); stopping what it started", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        for part in threads:
            part.stop.set()
        if supervisor is not None:
            supervisor.stop()
        servers.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
