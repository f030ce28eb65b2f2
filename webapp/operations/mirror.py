"""The web process's copy of each live grid, to answer what-if questions at once.

A session's grid is deterministic: the same scenario, seed and applied actions give the same
states. So instead of asking the feed worker (another process, maybe another machine), the web
process keeps its own :class:`ace_core.live.GridHistory` per session (a grid without a policy that
keeps every step's observation) and brings it forward to the asked step by playing the actions the
worker recorded since its last question. Opening the env costs 1-3 s once per session and process
and catching up ~1.5 ms per new step; after that a what-if at any step played is one simulation,
whatever the session's length.

Each session's grid has its own lock (its observations share one simulation grid); the registry of
grids is locked only to look an entry up, so one operator's request never waits for another
session's, only for an earlier request on the same session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ace_core import live  # the grid's modules load when first used here (ace_core.lazy)
from ace_core.live import DO_NOTHING, LiveActionError, parse_action
from webapp.operations import selectors
from webapp.operations.errors import OperationsError
from webapp.operations.models import LiveSession

if TYPE_CHECKING:
    from ace_core.live import GridHistory

MAX_GRIDS = 4
"""grids kept per process (an env of the 36-bus grid holds ~50 MB)"""


@dataclass(eq=False)
class _Mirror:
    """One session's grid in this process."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    """held by the request using the grid (opening it, catching up, simulating)"""
    history: GridHistory | None = None
    users: int = 0
    """requests holding or waiting for ``lock`` (changed under the registry lock)"""
    retired: bool = False
    """evicted or forgotten: the last user closes it"""

    def close(self) -> None:
        if self.history is not None:
            self.history.grid.close()
            self.history = None


_mirrors: OrderedDict[tuple[int, str], _Mirror] = OrderedDict()
_registry_lock = threading.Lock()
"""guards ``_mirrors`` and the users counts only; never held while a grid works"""


def _key(session: LiveSession) -> tuple[int, str]:
    # the creation time too: a database rebuilt (tests, a demo reset) reuses primary keys
    return session.pk, session.created_at.isoformat()


def _retire(mirror: _Mirror) -> bool:
    """Mark ``mirror`` out of the registry; whether it is idle (so to close now). Under the
    registry lock."""
    mirror.retired = True
    return mirror.users == 0


@contextmanager
def _checked_out(session: LiveSession) -> Iterator[_Mirror]:
    """The session's entry, kept open while the caller uses it (an eviction in the meantime closes
    it when the last user is done, not under their feet)."""
    idle: list[_Mirror] = []
    with _registry_lock:
        key = _key(session)
        mirror = _mirrors.get(key)
        if mirror is None:
            mirror = _mirrors[key] = _Mirror()
        _mirrors.move_to_end(key)
        mirror.users += 1
        while len(_mirrors) > MAX_GRIDS:
            oldest = _mirrors.popitem(last=False)[1]
            if _retire(oldest):
                idle.append(oldest)
    for oldest in idle:
        oldest.close()
    try:
        yield mirror
    finally:
        with _registry_lock:
            mirror.users -= 1
            last = mirror.retired and mirror.users == 0
        if last:
            mirror.close()


def _history_at(mirror: _Mirror, session: LiveSession, step: int) -> GridHistory:
    """The session's grid, played at least to ``step``. Under ``mirror.lock``."""
    if mirror.history is None:
        grid = live.LiveGrid(
            session.env,
            session.scenario_index,
            session.seed,
            None,
            start_step=session.start_step,
            max_steps=session.max_steps,
        )
        try:
            mirror.history = live.GridHistory(grid)
        except Exception:
            grid.close()
            raise
    history = mirror.history
    if history.step_index < step:
        for spec in selectors.applied_actions(session_id=session.pk, after=history.step_index, upto=step):
            history.advance(parse_action(spec, history.grid.space) if spec else DO_NOTHING)
    if history.step_index < step:
        raise OperationsError(f"step {step} of session {session.pk} is not recorded yet")
    return history


def what_if(*, session: LiveSession, step: int, action: Any) -> dict[str, Any]:
    """Simulate ``action`` from the state of ``step`` (refusals carry the reason)."""
    if not 0 <= step <= session.current_step:
        raise OperationsError(
            f"step {step} does not exist in session {session.pk}; accepted: 0 to {session.current_step}"
        )
    with _checked_out(session) as mirror, mirror.lock:
        history = _history_at(mirror, session, step)
        try:
            parsed = parse_action(action, history.grid.space)
        except LiveActionError as error:
            raise OperationsError(str(error)) from None
        outcome = history.what_if(step, parsed).to_dict()
    outcome["step"] = step
    outcome["stale"] = step != session.current_step
    return outcome


def forget(session: LiveSession) -> None:
    """Hand the session's grid back to the env pool (at once, or when its last request ends)."""
    with _registry_lock:
        mirror = _mirrors.pop(_key(session), None)
        idle = mirror is not None and _retire(mirror)
    if idle:
        mirror.close()
