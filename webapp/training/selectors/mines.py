"""Mines of expert decisions: the finished ones on disk (as :mod:`ace_core.imitation.mine_files`
reads them) and the launches in rows."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.conf import settings

from ace_core.imitation.mine_files import MineSummary
from webapp.jobs.models import JobStatus
from webapp.training.models import Mine

MINE_TOP_ACTIONS = 25
"""topology actions a mine's page lists, most played first"""


def mines_dir() -> Path:
    """Where the web app writes mines: ``GRIDACE_MINES_DIR``, else the cache that the trainer's
    ``pretrain_mine=auto`` uses too (``$GRIDACE_CACHE_DIR/mines``)."""
    if settings.GRIDACE_MINES_DIR:
        return Path(settings.GRIDACE_MINES_DIR)
    from ace_core.grid.action_space import cache_dir

    return cache_dir() / "mines"


def mine_roots() -> list[Path]:
    """Folders whose sub-folders are listed as mines: the mines folder, then ``DATA_DIR/mines``."""
    roots = [mines_dir().resolve(), (Path(settings.GRIDACE_DATA_DIR) / "mines").resolve()]
    return list(dict.fromkeys(roots))


MineInfo = MineSummary
"""a finished mine as the mines pages show it (:class:`ace_core.imitation.mine_files.MineSummary`)"""


def mine_list(*, env: str = "") -> list[MineInfo]:
    """Finished mines under :func:`mine_roots` (of ``env`` when given), by env then name; a name
    found in two roots is listed once, from the first."""
    found: dict[str, MineInfo] = {}
    for root in mine_roots():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if folder.name in found or not folder.is_dir():
                continue
            info = MineSummary.read(folder)
            if info is not None and (not env or info.env == env):
                found[folder.name] = info
    return sorted(found.values(), key=lambda info: (info.env, info.name))


def mine_get(*, name: str) -> MineInfo | None:
    """The finished mine of that directory name; only listed mines are found (never a path)."""
    return next((info for info in mine_list() if info.name == name), None)


def mine_by_path(*, path: str) -> MineInfo | None:
    """The finished mine whose directory is ``path`` (as listed: resolved)."""
    return next((info for info in mine_list() if info.path == path), None)


def mine_launches(*, limit: int = 50) -> list[Mine]:
    """The mines started from the web app, newest first."""
    return list(Mine.objects.select_related("launched_by").order_by("-created_at", "-id")[:limit])


def mine_launch_latest(*, name: str) -> Mine | None:
    return Mine.objects.select_related("launched_by").filter(name=name).order_by("-id").first()


MINE_NAME_MAX_LENGTH = 200
"""no mine directory, nor any row, has a longer name"""


def mine_lookup(*, name: str) -> tuple[MineInfo | None, Mine | None]:
    """The finished mine of that name and the newest launch of it (each None when there is none);
    a name no mine can have (a NUL, too long) finds nothing without reading the disk."""
    if "\x00" in name or len(name) > MINE_NAME_MAX_LENGTH:
        return None, None
    return mine_get(name=name), mine_launch_latest(name=name)


def mine_progress(*, mine: Mine) -> dict[str, Any]:
    """How far a launched mine is: its status, the episodes on disk (``episodes/*.npz``) out of
    those it plays, and its error when it failed."""
    episodes = Path(mine.out_dir) / "episodes"
    done = sum(1 for _ in episodes.glob("*.npz")) if episodes.is_dir() else 0
    return {
        "name": mine.name,
        "status": mine.status,
        "done": done,
        "total": mine.episodes_total,
        "finished": mine.status == JobStatus.SUCCEEDED,
        "error": mine.error,
    }


@functools.lru_cache(maxsize=4)
def _action_space(env: str) -> Any:
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env

    grid = make_env(env, cache_chronics=False)
    try:
        return build_action_space(grid)
    finally:
        grid.close()


def mine_top_actions(*, info: MineInfo, limit: int = MINE_TOP_ACTIONS) -> list[dict[str, Any]]:
    """The mine's most played topology actions: index, times played, share of the expert's
    topology decisions, and the action in words (empty when the env is not available here or
    the set was mined on another action space)."""
    pairs, fingerprint = info.top_actions(limit)
    if not pairs:
        return []
    describe = None
    try:
        space = _action_space(info.env)
        if space.fingerprint() == fingerprint:
            describe = space.describe
    except Exception:  # noqa: BLE001 -- an env missing here: the indices are still worth showing
        describe = None
    total = info.topology_decisions or 1
    return [
        {
            "index": index,
            "count": count,
            "share": count / total,
            "description": describe(index) if describe else "",
        }
        for index, count in pairs
    ]
