"""A finished live session's day as grid2op EpisodeData on disk, for the day-comparison page.

Three plays of the session's day, each under
``$GRIDACE_DATA_DIR/session-episodes/session-<pk>/<play>/``, written once (a session that ended
never changes) to a temporary folder renamed when complete, so a reader never sees half an episode:

* ``operator``: the operator's decisions played again through grid2op's Runner
  (:func:`ace_core.live.export_episode`), written the first time it is asked for;
* ``do-nothing``: doing nothing on the same day for the same number of steps, the reference the
  operator's decisions are judged against, written the same way;
* ``policy``: the agent the console deploys (:func:`deployed_agent`) deciding every step of the
  same day, as many steps (:func:`ace_core.live.play_day`). An agent that simulates its candidates
  takes tens of seconds for a day, so it is never played inside a request: :func:`day_play_request`
  queues a :class:`~webapp.operations.models.DayPlay` job on the ``default`` queue and its worker
  (:mod:`webapp.operations.worker.plays`) calls :func:`day_play_write`. A play whose worker falls
  silent is failed with the reason by ``manage.py watchdog`` (:func:`day_plays_recover_silent`), or
  when the play is asked for again, whichever comes first; the page then offers it again.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core import live  # the grid's modules load when first used here (ace_core.lazy)
from ace_core.agents.deployed import deployed_checked
from webapp.audit.services import audit_record
from webapp.jobs.models import ACTIVE_STATUSES, JobStatus
from webapp.jobs.recovery import Recovered, job_fail_silent, jobs_fail_silent
from webapp.jobs.services import job_silent
from webapp.operations import selectors
from webapp.operations.errors import OperationsError, SessionStateError
from webapp.operations.models import DayPlay, LiveSession, SessionStatus
from webapp.operations.services.common import locked_session
from webapp.operations.tasks import play_session_day

EXPORTS_FOLDER = "session-episodes"
REPLAYS = ("operator", "do-nothing")
"""the session's own actions, or none, played again: written when first asked for"""
AGENT_PLAYS = ("policy",)
"""an agent deciding each step of the day: written by a background job (:func:`day_play_request`)"""
PLAYS = REPLAYS + AGENT_PLAYS
GREEDY = "greedy"
"""the expert the console falls back on when the session's policy file is gone"""
PLAY_LOST = "the worker playing this day stopped sending its heartbeat"
PLAY_RECOVERED = "live.session.play_day.recover.failed"
"""the audit action of a play failed because its worker fell silent"""


def session_episodes_root() -> Path:
    return Path(settings.GRIDACE_DATA_DIR) / EXPORTS_FOLDER


def play_folder(session: LiveSession, play: str) -> Path:
    """Where ``play`` of the session's day is (or will be) written."""
    return session_episodes_root() / f"session-{session.pk}" / play


def _check_play(play: str, accepted: tuple[str, ...] = PLAYS) -> None:
    if play not in accepted:
        raise SessionStateError(f"play {play!r} is not accepted; choose one of: {', '.join(accepted)}")


def _check_ended(session: LiveSession) -> None:
    if session.status in (SessionStatus.RUNNING, SessionStatus.PAUSED) or session.current_step < 1:
        raise SessionStateError(
            f"session {session.pk} is {session.status} at step {session.current_step}; only a session that "
            "ended after at least one step can be compared"
        )


def _write_once(folder: Path, write: Callable[[Path], object]) -> Path:
    """``write(work)`` into a temporary folder beside ``folder``, renamed to it when complete."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        write(work)
        work.rename(folder)
    except OSError:
        if not folder.is_dir():  # another writer finished first: theirs is as good
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def session_episode(*, session: LiveSession, play: str = "operator") -> Path:
    """The folder of the session's episode as ``play`` plays it (see the module). The replays are
    written the first time they are asked for; the policy's play only by its job (until it is
    written, the refusal says how to ask for it). Refuses a session still running or paused, or
    one that never stepped."""
    _check_play(play)
    _check_ended(session)
    folder = play_folder(session, play)
    if folder.is_dir():
        return folder
    if play in AGENT_PLAYS:
        latest = DayPlay.objects.filter(session=session, play=play).order_by("-id").first()
        state = (
            "has not been asked for"
            if latest is None
            else f"is {latest.status}" + (f" ({latest.error})" if latest.status == JobStatus.FAILED else "")
        )
        raise SessionStateError(
            f"the deployed policy's play of session {session.pk}'s day {state}; ask for it with "
            "“Play the deployed policy on this day” on the day-comparison page, and choose it once it is done"
        )
    actions = selectors.applied_actions(session_id=session.pk)
    if play == "do-nothing":
        actions = [{}] * len(actions)  # an empty action is doing nothing (ace_core.live.ReplayAgent)
    return _write_once(
        folder,
        lambda work: live.export_episode(
            env_name=session.env,
            scenario_index=session.scenario_index,
            seed=session.seed,
            actions=actions,
            out_dir=work,
            start_step=session.start_step,
            max_steps=session.max_steps,
        ),
    )


def deployed_agent(session: LiveSession) -> tuple[str, str]:
    """The agent the console deployed for ``session``, as a spec
    (:class:`ace_core.agents.spec.AgentSpec`) and in words: the session's frozen policy checked by
    simulation as it is deployed on its grid (:func:`ace_core.agents.deployed.deployed_checked`, the
    expert's search behind it), or the greedy expert when the policy file is gone."""
    deployment = f"deployment {session.deployment_id}"
    path = Path(session.policy_path) if session.policy_path else None
    if path is None or not path.exists():
        return GREEDY, f"the greedy expert ({deployment}'s policy file is gone)"
    spec = deployed_checked(session.env, path)
    net = ", the expert's search behind it" if spec.expert else ""
    return str(spec), (
        f"the deployed policy ({deployment}: its {spec.top_k} most likely actions checked by simulation{net})"
    )


@transaction.atomic
def day_play_request(*, session_id: int, user: AbstractBaseUser, play: str = "policy") -> DayPlay:
    """Queue the deployed agent's play of a finished session's day (audited). Refuses a session
    still running or paused, one that never stepped, a play already written, queued or running;
    a running play whose worker fell silent is failed, with the reason, and queued again."""
    _check_play(play, AGENT_PLAYS)
    session = locked_session(session_id)
    _check_ended(session)
    if play_folder(session, play).is_dir():
        raise SessionStateError(
            f"session {session.pk}'s day was already played by the deployed policy; choose it on the "
            "day-comparison page"
        )
    active = DayPlay.objects.select_for_update().filter(
        session=session, play=play, status__in=ACTIVE_STATUSES
    )
    for row in active:
        if not _recover_if_silent(row):
            raise SessionStateError(
                f"the deployed policy's play of session {session.pk}'s day is already {row.status}; "
                "the day-comparison page lists it when it is done"
            )
    steps = len(selectors.applied_actions(session_id=session.pk))
    if steps < 1:
        raise OperationsError(f"session {session.pk} recorded no step played; there is no day to play")
    agent, label = deployed_agent(session)
    row = DayPlay.objects.create(
        session=session, play=play, agent=agent, agent_label=label, steps=steps, requested_by=user
    )
    row.task_id = str(play_session_day.enqueue(play_id=row.pk).id)
    row.save(update_fields=["task_id"])
    audit_record(
        actor=user,
        action="live.session.play_day",
        target=row,
        after={"session": session.pk, "play": play, "agent": agent, "steps": steps},
    )
    return row


def _recover_if_silent(row: DayPlay) -> bool:
    """Fail a running play whose worker stopped stamping it (the worker died), as the watchdog
    does (:func:`day_plays_recover_silent`); True if it did."""
    now = timezone.now()
    stale_after = timedelta(seconds=settings.GRIDACE_STALE_AFTER_SECONDS)
    if not job_silent(row, now=now, stale_after=stale_after):
        return False
    job_fail_silent(row, lost=PLAY_LOST, now=now, stale_after=stale_after, audit_action=PLAY_RECOVERED)
    return True


@transaction.atomic
def day_plays_recover_silent(*, now: datetime, stale_after: timedelta) -> list[Recovered]:
    """Fail every running play silent for longer than ``stale_after``, with the reason: the
    day-comparison page shows it and offers the play again. What ``manage.py watchdog`` calls for
    plays (:mod:`webapp.jobs.recovery`; registered in :mod:`webapp.operations.apps`)."""
    failed = jobs_fail_silent(
        model=DayPlay, lost=PLAY_LOST, now=now, stale_after=stale_after, audit_action=PLAY_RECOVERED
    )
    return [
        Recovered(
            job=f"play {row.pk} (session {row.session_id}, {row.play})", outcome="failed", reason=reason
        )
        for row, reason in failed
    ]


def day_play_write(*, day_play: DayPlay) -> Path:
    """Play ``day_play``'s agent on its session's day and write the episode (what its job's worker
    runs); a folder already written is kept as it is."""
    session = day_play.session
    folder = play_folder(session, day_play.play)
    if folder.is_dir():
        return folder
    return _write_once(
        folder,
        lambda work: live.play_day(
            env_name=session.env,
            scenario_index=session.scenario_index,
            seed=session.seed,
            agent=day_play.agent,
            steps=day_play.steps,
            out_dir=work,
            start_step=session.start_step,
            max_steps=session.max_steps,
        ),
    )
