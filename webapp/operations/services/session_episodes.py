"""A finished live session as grid2op EpisodeData on disk, for the day-comparison page.

The operator's decisions are played again through grid2op's Runner
(:func:`ace_core.live.export_episode`), and so is doing nothing on the same day for the same
number of steps: the reference the operator's decisions are judged against. Each is written once,
under ``$GRIDACE_DATA_DIR/session-episodes/session-<pk>/<operator|do-nothing>/`` (a session that
ended never changes), to a temporary folder renamed when complete, so a reader never sees half an
episode.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from ace_core.live import export_episode
from webapp.operations import selectors
from webapp.operations.errors import SessionStateError
from webapp.operations.models import LiveSession, SessionStatus

EXPORTS_FOLDER = "session-episodes"
PLAYS = ("operator", "do-nothing")
"""the operator's decisions as played, or doing nothing on the same day"""


def session_episodes_root() -> Path:
    return Path(settings.GRIDACE_DATA_DIR) / EXPORTS_FOLDER


def session_episode(*, session: LiveSession, play: str = "operator") -> Path:
    """The folder of the session's episode as ``play`` plays it (see the module), written the first
    time it is asked for. Refuses a session still running or paused, or one that never stepped."""
    if play not in PLAYS:
        raise SessionStateError(f"play {play!r} is not accepted; choose one of: {', '.join(PLAYS)}")
    if session.status in (SessionStatus.RUNNING, SessionStatus.PAUSED) or session.current_step < 1:
        raise SessionStateError(
            f"session {session.pk} is {session.status} at step {session.current_step}; only a session that "
            "ended after at least one step can be compared"
        )
    folder = session_episodes_root() / f"session-{session.pk}" / play
    if folder.is_dir():
        return folder
    actions = selectors.applied_actions(session_id=session.pk)
    if play == "do-nothing":
        actions = [{}] * len(actions)  # an empty action is doing nothing (ace_core.live.ReplayAgent)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{play}-", dir=folder.parent))
    try:
        export_episode(
            env_name=session.env,
            scenario_index=session.scenario_index,
            seed=session.seed,
            actions=actions,
            out_dir=work,
            max_steps=session.max_steps,
        )
        work.rename(folder)
    except OSError:
        if not folder.is_dir():  # another request wrote it first: theirs is as good
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder
