"""The live feed: steps each session's grid at its speed and tells the consoles.

``manage.py live_feed`` runs :class:`FeedWorker`: it claims live sessions nobody owns (new ones, or
ones whose worker fell silent) and runs one :class:`SessionFeed` thread per session. A session
feed rebuilds its grid by replaying the recorded actions (so a restarted worker resumes from the
last persisted step), then loops: heartbeat; wait for the next tick (or a single step while
paused); close the step to decisions and take the accepted action; step the grid; run the
recommendation pipeline (its cards and the step's assessment); record everything in one transaction; send the step message once,
pre-encoded, to the session's group, with only what changed since the previous step.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connections

from ace_core.live import (
    DO_NOTHING,
    LiveGrid,
    alarms_between,
    grid_layout,
    lines_switched_off,
    n1_baseline,
    parse_action,
    security_alarms,
)
from webapp.live.broadcast import BackgroundPublisher
from webapp.live.session_messages import StepChanges, group_name
from webapp.operations import selectors, services
from webapp.operations.errors import LostOwnershipError
from webapp.operations.models import SessionStatus

logger = logging.getLogger(__name__)

DATABASE_AWAY = (OperationalError, InterfaceError)
"""what a restarted database or a dropped connection raises"""


class SessionFeed:
    """One session's loop; ``run(max_steps=n)`` returns after n steps (tests, benchmarks)."""

    def __init__(self, *, session_id: int, worker_token: str, publisher: BackgroundPublisher | None) -> None:
        self.session_id = session_id
        self.worker_token = worker_token
        self.publisher = publisher
        self.stop = threading.Event()
        self.recommend_ms: list[float] = []
        self.assessment: dict[str, Any] | None = None
        self.n1_baseline: dict[str, Any] | None = None
        """the N-1 of the session's first step: alarms fire when N-1 gets worse than it"""
        """the last recorded step's assessment (security alarms are raised when it worsens)"""
        self.changes = StepChanges()
        """what the consoles have of the cards and assessment: each step sends what changed"""

    def _send(self, message: dict[str, Any]) -> None:
        if self.publisher is not None:
            self.publisher.send(group_name(self.session_id), message)

    def run(self, *, max_steps: int | None = None) -> None:
        try:
            self._run(max_steps)
        except LostOwnershipError:
            logger.info("session %s was taken over by another worker", self.session_id)
        except DATABASE_AWAY:
            # Not the session's fault (a restart, a dropped connection): failing it would end it
            # for good. The feed stops; its worker hands the session back and claims it again,
            # and it resumes from its recorded steps.
            logger.warning("live session %s stopped: the database connection failed", self.session_id)
        except Exception as error:
            logger.exception("live session %s failed", self.session_id)
            services.session_fail(
                session_id=self.session_id,
                worker_token=self.worker_token,
                error=f"{type(error).__name__}: {error}",
            )

    def run_in_thread(self) -> None:
        try:
            self.run()
        finally:
            connections.close_all()  # this thread's own connection

    def _run(self, max_steps: int | None) -> None:
        session = services.session_heartbeat(session_id=self.session_id, worker_token=self.worker_token)
        grid = LiveGrid(
            session.env,
            session.scenario_index,
            session.seed,
            session.policy_path,
            k=session.k,
            start_step=session.start_step,
            max_steps=session.max_steps,
        )
        try:
            self._loop(grid, session, max_steps)
        finally:
            grid.close()

    def _loop(self, grid: LiveGrid, session: Any, max_steps: int | None) -> None:
        services.session_resumed(
            session_id=self.session_id,
            worker_token=self.worker_token,
            layout=grid_layout(grid.env, grid.space),
        )
        if session.current_step < 0:
            result = grid.reset()
            self._record(grid, result, None, "", None)
        else:
            grid.replay(selectors.applied_actions(session_id=self.session_id))
            self.assessment = selectors.current_assessment(session=session)
            self.n1_baseline = n1_baseline(selectors.first_assessment(session=session))
            logger.info("session %s resumed at step %s", self.session_id, grid.step_index)
        played = 0
        due = time.monotonic() + session.speed_seconds
        poll = settings.GRIDACE_LIVE_POLL_SECONDS
        while not self.stop.is_set() and not grid.done and (max_steps is None or played < max_steps):
            session = services.session_heartbeat(session_id=self.session_id, worker_token=self.worker_token)
            if session.status not in (SessionStatus.RUNNING, SessionStatus.PAUSED):
                return
            if session.status == SessionStatus.PAUSED:
                if not session.steps_requested:
                    time.sleep(poll)
                    due = time.monotonic()
                    continue
            else:
                wait = due - time.monotonic()
                if wait > 0:
                    # wake up often enough to obey pause / stop / speed changes
                    time.sleep(min(wait, poll))
                    continue
            # keep the cadence (no drift), but never try to catch up on time lost while behind
            due = max(due + session.speed_seconds, time.monotonic())
            previous = grid.state
            decision = services.decisions_close(session_id=self.session_id, worker_token=self.worker_token)
            action, refusal = DO_NOTHING, ""
            if decision is not None:
                action = parse_action(decision.action, grid.space)
                # the grid moved on since the operator's what-if only if cooldowns changed; re-check
                refusal = grid.refusal(action)
                if refusal:
                    action = DO_NOTHING
            switched_off = lines_switched_off(action, grid.space, grid.env.action_space)
            result = grid.step(action)
            self._record(grid, result, decision, refusal, previous, switched_off)
            played += 1

    def _record(
        self,
        grid: LiveGrid,
        result: Any,
        decision: Any,
        refusal: str,
        previous: dict | None,
        switched_off: frozenset[int] = frozenset(),
    ) -> None:
        alarms = alarms_between(
            previous,
            result.state,
            done=result.done,
            finished=result.finished,
            reason=result.reason,
            names=grid.space.names,
            switched_off=switched_off,  # the operator's own doing is no trip
        )
        if result.assessment:
            if self.n1_baseline is None:
                self.n1_baseline = n1_baseline(result.assessment, result.step)
            result.assessment["n1_baseline"] = self.n1_baseline  # the console shows N-1 against it
            alarms += security_alarms(
                self.assessment, result.assessment, self.n1_baseline, names=grid.space.names
            )
            self.assessment = result.assessment
        message = services.step_record(
            session_id=self.session_id,
            worker_token=self.worker_token,
            result=result,
            space=grid.space,
            applied=decision,
            refusal=refusal,
            previous_state=previous,
            alarms=alarms,
        )
        if "total_ms" in result.timings:
            self.recommend_ms.append(result.timings["total_ms"])
        self._send(self.changes.compact(message))


class FeedWorker:
    """Claims live sessions and runs each in its own thread until told to stop."""

    def __init__(self, *, max_sessions: int = 8) -> None:
        self.worker_token = uuid.uuid4().hex
        self.max_sessions = max_sessions
        self.publisher = BackgroundPublisher.shared()
        self.feeds: dict[int, tuple[SessionFeed, threading.Thread]] = {}
        self.stopping = threading.Event()

    def poll_once(self) -> list[int]:
        close_old_connections()
        for session_id, (_, thread) in list(self.feeds.items()):
            if not thread.is_alive():
                # A feed that stopped on an error still holds its claim, and a worker never claims
                # its own sessions: hand it back so that one is claimed again at once.
                services.session_release(session_id=session_id, worker_token=self.worker_token)
                del self.feeds[session_id]
        room = self.max_sessions - len(self.feeds)
        if room <= 0:
            return []
        claimed = services.sessions_claim(worker_token=self.worker_token, limit=room)
        for session_id in claimed:
            feed = SessionFeed(
                session_id=session_id, worker_token=self.worker_token, publisher=self.publisher
            )
            thread = threading.Thread(
                target=feed.run_in_thread, name=f"live-session-{session_id}", daemon=True
            )
            self.feeds[session_id] = (feed, thread)
            thread.start()
            logger.info("live feed %s took session %s", self.worker_token[:8], session_id)
        return claimed

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    self.poll_once()
                except DATABASE_AWAY:  # the database restarts: keep polling until it is back
                    logger.warning("live feed %s: the database is unavailable", self.worker_token[:8])
                self.stopping.wait(settings.GRIDACE_LIVE_POLL_SECONDS * 5)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop the feeds and hand their sessions back, so another worker resumes them at once."""
        for feed, thread in self.feeds.values():
            feed.stop.set()
            thread.join(timeout=10)
            services.session_release(session_id=feed.session_id, worker_token=self.worker_token)
        self.publisher.flush()
        connections.close_all()
