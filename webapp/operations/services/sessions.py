"""Starting live sessions and controlling them (pause, resume, single steps, speed, stop).

Every write runs under ``transaction.atomic`` and locks the session row first (see
:mod:`webapp.operations.services.common`); each is audited in the same transaction.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core.live import LiveActionError
from webapp.audit.services import audit_record
from webapp.operations import selectors
from webapp.operations.errors import OperationsError, SessionStateError
from webapp.operations.models import LIVE_STATUSES, LiveSession, SessionStatus
from webapp.operations.services.common import locked_session, session_changed, session_end
from webapp.training.models import Deployment

K_RANGE = (1, 10)
SPEED_RANGE = (0.0, 60.0)
CONTROL_COMMANDS = ("pause", "resume", "step", "speed", "stop")


@transaction.atomic
def session_start(
    *,
    user: AbstractBaseUser,
    scenario_index: int,
    seed: int = 0,
    k: int = 3,
    speed_seconds: float = 2.0,
    start_step: int = 0,
    max_steps: int = 0,
    label: str = "",
) -> LiveSession:
    """A new session of the deployed policy's env, on day ``scenario_index`` from ``start_step``
    steps into it (where an incident began; 0: the day's first step); a feed worker picks it up
    within a second."""
    deployment = Deployment.objects.select_related("checkpoint__run").order_by("-deployed_at", "-id").first()
    if deployment is None:
        raise SessionStateError("no policy is deployed; an engineer must deploy a checkpoint first")
    env = deployment.checkpoint.run.env
    if not K_RANGE[0] <= k <= K_RANGE[1]:
        raise OperationsError(
            f"k={k} is out of range; accepted: {K_RANGE[0]} to {K_RANGE[1]} recommendations", field="k"
        )
    if not SPEED_RANGE[0] <= speed_seconds <= SPEED_RANGE[1]:
        raise OperationsError(
            f"speed={speed_seconds} s is out of range; accepted: {SPEED_RANGE[0]} to {SPEED_RANGE[1]} s per step",
            field="speed_seconds",
        )
    if seed < 0 or max_steps < 0:
        raise OperationsError(
            "seed and max_steps must be 0 or more", field="seed" if seed < 0 else "max_steps"
        )
    names = selectors.scenario_names(env)
    if not 0 <= scenario_index < len(names):
        raise OperationsError(
            f"scenario {scenario_index} does not exist for {env}; accepted: 0 to {len(names) - 1}",
            field="scenario_index",
        )
    try:
        scenario = selectors.session_scenario(env, scenario_index, start_step=start_step, max_steps=max_steps)
    except LiveActionError as error:
        raise OperationsError(f"{env}: {error}", field="start_step") from error
    if len(label) > 100:
        raise OperationsError(f"label is {len(label)} characters long; accepted: at most 100", field="label")
    session = LiveSession.objects.create(
        label=label,
        env=env,
        scenario_index=scenario_index,
        scenario_name=scenario.name,
        start_step=start_step,
        max_steps=max_steps,
        seed=seed,
        k=k,
        speed_seconds=speed_seconds,
        deployment=deployment,
        policy_path=deployment.path,
        created_by=user,
    )
    audit_record(
        actor=user,
        action="live.session.start",
        target=session,
        after={
            "env": env,
            "scenario": session.scenario_name,
            "start_step": start_step,
            "seed": seed,
            "k": k,
            "speed": speed_seconds,
            "deployment": deployment.pk,
        },
    )
    return session


@transaction.atomic
def session_control(
    *, session_id: int, user: AbstractBaseUser, command: str, speed_seconds: float | None = None
) -> LiveSession:
    """pause, resume, step (one step while paused), speed (seconds per step), stop."""
    if command not in CONTROL_COMMANDS:
        raise OperationsError(
            f"unknown command {command!r}; accepted: {', '.join(CONTROL_COMMANDS)}", field="command"
        )
    session = locked_session(session_id)
    if session.status not in LIVE_STATUSES:
        raise SessionStateError(
            f"session {session.pk} is {session.status}; only running or paused sessions obey"
        )
    before = {"status": session.status, "speed_seconds": session.speed_seconds}
    fields = ["status"]
    if command == "pause":
        session.status = SessionStatus.PAUSED
    elif command == "resume":
        session.status = SessionStatus.RUNNING
        session.steps_requested = 0
        fields.append("steps_requested")
    elif command == "step":
        if session.status != SessionStatus.PAUSED:
            raise SessionStateError("single steps are for paused sessions; pause the session first")
        session.steps_requested += 1
        fields.append("steps_requested")
    elif command == "speed":
        if speed_seconds is None or not SPEED_RANGE[0] <= speed_seconds <= SPEED_RANGE[1]:
            raise OperationsError(
                f"speed={speed_seconds} s is out of range; accepted: {SPEED_RANGE[0]} to {SPEED_RANGE[1]} s per step",
                field="speed_seconds",
            )
        session.speed_seconds = speed_seconds
        fields.append("speed_seconds")
    else:
        reason = f"stopped by {user.get_username()}"
        fields += session_end(session, SessionStatus.STOPPED, reason=reason, now=timezone.now())
    session_changed(session, *fields)
    audit_record(
        actor=user,
        action=f"live.session.{command}",
        target=session,
        before=before,
        after={"status": session.status, "speed_seconds": session.speed_seconds},
    )
    return session
