"""The web process's copy of each live grid, to answer what-if questions at once.

A session's grid is deterministic: the same scenario, seed and applied actions give the same
states. So instead of asking the feed worker (another process, maybe another machine), the web
process keeps its own :class:`ace_core.live.LiveGrid` per session (no policy loaded) and brings it
to the asked step by replaying the actions the worker recorded. Opening the env costs 1-3 s once
per session and process; catching up costs ~1.5 ms per step.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ace_core.live import LiveActionError, LiveGrid, parse_action
from webapp.operations import selectors
from webapp.operations.errors import OperationsError
from webapp.operations.models import LiveSession

MAX_GRIDS = 4
"""grids kept per process (an env of the 36-bus grid holds ~50 MB)"""

_grids: OrderedDict[tuple[int, str], LiveGrid] = OrderedDict()
_lock = threading.Lock()


def _key(session: LiveSession) -> tuple[int, str]:
    # the creation time too: a database rebuilt (tests, a demo reset) reuses primary keys
    return session.pk, session.created_at.isoformat()


def _grid_at(session: LiveSession, step: int) -> LiveGrid:
    key = _key(session)
    grid = _grids.get(key)
    if grid is None:
        grid = LiveGrid(session.env, session.scenario_index, session.seed, None, max_steps=session.max_steps)
        grid.reset()
        _grids[key] = grid
        while len(_grids) > MAX_GRIDS:
            _grids.popitem(last=False)[1].close()
    _grids.move_to_end(key)
    if grid.step_index > step:
        grid.reset()
    for spec in selectors.applied_actions(session_id=session.pk, after=grid.step_index, upto=step):
        grid.advance(
            parse_action(spec, grid.space) if spec else parse_action({"kind": "nothing"}, grid.space)
        )
    if grid.step_index != step:
        raise OperationsError(f"step {step} of session {session.pk} is not recorded yet")
    return grid


def what_if(*, session: LiveSession, step: int, action: Any) -> dict[str, Any]:
    """Simulate ``action`` from the state of ``step`` (refusals carry the reason)."""
    if not 0 <= step <= session.current_step:
        raise OperationsError(
            f"step {step} does not exist in session {session.pk}; accepted: 0 to {session.current_step}"
        )
    with _lock:  # one grid per session, shared by the server's threads
        grid = _grid_at(session, step)
        try:
            parsed = parse_action(action, grid.space)
        except LiveActionError as error:
            raise OperationsError(str(error)) from None
        outcome = grid.what_if(parsed).to_dict()
    outcome["step"] = step
    outcome["stale"] = step != session.current_step
    return outcome


def forget(session: LiveSession) -> None:
    with _lock:
        grid = _grids.pop(_key(session), None)
        if grid is not None:
            grid.close()
