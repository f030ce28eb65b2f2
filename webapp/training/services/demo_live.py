"""The demo's live console: a deployed policy and a live session moving, ready when an operator
logs in (:func:`live_demo_setup`, used by ``manage.py demo``).

Without ``--live-policy`` the demo trains its own small SAC policy once
(:data:`LIVE_POLICY_RUN`) and reuses it; with one, the checkpoint is checked, recorded as a
succeeded run and deployed (:func:`live_policy_check`, :func:`live_policy_deploy`).
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone

from ace_core.config import TrainConfig
from ace_core.errors import AceError
from ace_core.events import CheckpointEvent, EpisodeEvent, MemorySink, MetricsEvent
from webapp.audit.services import audit_record
from webapp.jobs.models import JobStatus
from webapp.operations.models import LIVE_STATUSES, LiveSession
from webapp.operations.selectors import first_test_scenario
from webapp.operations.services import session_control, session_start
from webapp.training.errors import RunStateError
from webapp.training.models import Deployment, TrainingRun
from webapp.training.selectors.deployments import deployment_current
from webapp.training.services import events as event_services
from webapp.training.services.deployment import checkpoint_deploy

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
