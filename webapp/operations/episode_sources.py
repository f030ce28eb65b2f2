"""The episodes the day-comparison page may open, and the names the browser picks them by.

The browser never sends a path: it sends a name this module gave, and the name is resolved here
to a folder inside one of the page's roots (:func:`ace_core.evaluation.day_compare.open_episode`
checks again after resolving links):

* ``runs/<run>/evaluations/<id>/<agent>/episodes/seed<S>/<scenario>``: an evaluation's episode
  (the runs folder; users who may view evaluations);
* ``session/<id>/operator``, ``session/<id>/do-nothing`` or ``session/<id>/policy``: a finished
  live session as the operator played it, doing nothing on the same day (both written on first
  use), or the deployed policy on the same day (listed once its background play is done;
  :mod:`webapp.operations.services.session_episodes`);
* ``extra<N>/<path>``: any grid2op Runner folder under the N-th of ``GRIDACE_EPISODE_ROOTS``.

``python manage.py episode_folders`` lists the roots and the episodes found under them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from ace_core.evaluation.day_compare import META_FILE
from webapp.accounts import roles
from webapp.jobs.models import JobStatus
from webapp.operations.errors import OperationsError, UnknownObjectError
from webapp.operations.models import DayPlay, LiveSession, SessionStatus
from webapp.operations.services.session_episodes import (
    PLAYS,
    play_folder,
    session_episode,
    session_episodes_root,
)
from webapp.training.models import Evaluation

KEY_MAX_LENGTH = 500
LISTED = 60
"""the most evaluations, sessions and extra-root episodes the page lists (the newest)"""
SEARCH_DEPTH = 6
"""how deep below an extra root episodes are listed"""
SESSION_KEY = re.compile(r"session/([0-9]{1,9})/(" + "|".join(re.escape(p) for p in PLAYS) + r")")
ACCEPTED_KEYS = (
    "accepted: an episode this page lists (an evaluation's episode, a finished session as played, "
    "doing nothing or the deployed policy on its day, or a Runner folder under GRIDACE_EPISODE_ROOTS)"
)


@dataclass(frozen=True)
class SessionDay:
    """A finished session's day and the deployed policy's play of it."""

    session: LiveSession
    policy: DayPlay | None
    """the latest play of the deployed policy asked for (None: never asked)"""
    played: bool
    """the policy's episode is written: the page lists it"""

    @property
    def policy_label(self) -> str:
        return self.policy.agent_label if self.policy else "the deployed policy"


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    group: str
    """the day it belongs to, as far as the name tells (env and scenario)"""


def episode_roots(user: AbstractBaseUser) -> dict[str, Path]:
    """The folders ``user`` may open episodes from, by the name keys start with."""
    roots: dict[str, Path] = {}
    if user.has_perm(roles.VIEW_EVALUATIONS):
        roots["runs"] = Path(settings.GRIDACE_RUNS_DIR)
    for i, extra in enumerate(getattr(settings, "GRIDACE_EPISODE_ROOTS", []), start=1):
        roots[f"extra{i}"] = Path(extra)
    return roots


def episode_folder(key: str, user: AbstractBaseUser) -> tuple[Path, Path]:
    """The folder a page's ``key`` names and the root it must lie in; refuses a name this page
    does not give (saying what is accepted, never where the folders are on the server)."""
    if not isinstance(key, str) or not key or len(key) > KEY_MAX_LENGTH or "\x00" in key:
        raise OperationsError(f"episode name {key[:80]!r} is not accepted; {ACCEPTED_KEYS}", field="episode")
    session = SESSION_KEY.fullmatch(key)
    if session:
        found = LiveSession.objects.filter(pk=int(session.group(1))).first()
        if found is None:
            raise UnknownObjectError(f"no live session {session.group(1)}; {ACCEPTED_KEYS}", field="episode")
        return session_episode(session=found, play=session.group(2)), session_episodes_root()
    root_name, _, rest = key.partition("/")
    roots = episode_roots(user)
    if root_name not in roots or not rest:
        raise OperationsError(f"episode name {key[:80]!r} is not accepted; {ACCEPTED_KEYS}", field="episode")
    return roots[root_name] / rest, roots[root_name]


def _relative_key(root_name: str, root: Path, folder: Path) -> str | None:
    try:
        return f"{root_name}/{folder.resolve().relative_to(root.resolve())}"
    except ValueError:
        return None


def _evaluation_choices(root: Path) -> list[Choice]:
    out = []
    evaluations = Evaluation.objects.filter(status=JobStatus.SUCCEEDED).select_related("run")[:LISTED]
    for evaluation in evaluations:
        run = evaluation.run
        base = Path(run.out_dir) / "evaluations" / str(evaluation.pk)
        for agent in sorted(evaluation.results):
            for folder in sorted((base / agent / "episodes").glob("seed*/*")):
                key = _relative_key("runs", root, folder)
                if key is None or not folder.is_dir():
                    continue
                seed = folder.parent.name.removeprefix("seed")
                out.append(
                    Choice(
                        key,
                        f"run {run.pk} · evaluation {evaluation.pk} · {agent} · seed {seed}",
                        f"{run.env} · scenario {folder.name}",
                    )
                )
    return out


def session_days() -> list[SessionDay]:
    """The finished sessions the page lists (the newest), each with its policy's play."""
    sessions = list(
        LiveSession.objects.exclude(status__in=(SessionStatus.RUNNING, SessionStatus.PAUSED))
        .filter(current_step__gte=1)
        .order_by("-id")[:LISTED]
    )
    latest: dict[int, DayPlay] = {}
    for play in DayPlay.objects.filter(session__in=sessions, play="policy").order_by("-id"):
        latest.setdefault(play.session_id, play)
    return [
        SessionDay(session, latest.get(session.pk), play_folder(session, "policy").is_dir())
        for session in sessions
    ]


def _session_choices(days: list[SessionDay]) -> list[Choice]:
    out = []
    for day in days:
        session = day.session
        group = (
            f"{session.env} · session {session.pk}'s day ({session.scenario_name or session.scenario_index})"
        )
        name = f"session {session.pk}" + (f" ({session.label})" if session.label else "")
        out.append(Choice(f"session/{session.pk}/operator", f"{name}: the operator's decisions", group))
        out.append(
            Choice(f"session/{session.pk}/do-nothing", f"{name}: doing nothing on the same day", group)
        )
        if day.played:
            out.append(
                Choice(f"session/{session.pk}/policy", f"{name}: {day.policy_label} on the same day", group)
            )
    return out


def _extra_choices(root_name: str, root: Path) -> list[Choice]:
    out = []
    for folder in runner_episodes(root)[:LISTED]:
        key = _relative_key(root_name, root, folder)
        if key is not None:
            out.append(Choice(key, str(folder.relative_to(root)), f"{root_name}: {root.name}"))
    return out


def runner_episodes(root: Path) -> list[Path]:
    """The episode folders (holding ``episode_meta.json``) under ``root``, down to
    :data:`SEARCH_DEPTH` levels."""
    found = []
    for depth in range(1, SEARCH_DEPTH + 1):
        found += [meta.parent for meta in root.glob("/".join(["*"] * depth + [META_FILE]))]
    return sorted(found)


def episode_choices(user: AbstractBaseUser, days: list[SessionDay] | None = None) -> list[Choice]:
    """What the page offers ``user``, grouped by day (``days``: :func:`session_days`, when the
    caller has them already)."""
    roots = episode_roots(user)
    choices = _evaluation_choices(roots["runs"]) if "runs" in roots else []
    choices += _session_choices(session_days() if days is None else days)
    for name, root in roots.items():
        if name.startswith("extra"):
            choices += _extra_choices(name, root)
    return sorted(choices, key=lambda choice: choice.group)  # stable: each group keeps its order


@lru_cache(maxsize=8)
def grid_drawing(env_name: str) -> dict[str, Any] | None:
    """The console's drawing of ``env_name`` (:func:`ace_core.live.grid_layout`); None for a grid
    not installed here (the page then shows the figures without diagrams)."""
    from ace_core.errors import AceError
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env
    from ace_core.live import grid_layout

    try:
        env = make_env(env_name, cache_chronics=False)
    except AceError:
        return None
    try:
        return grid_layout(env, build_action_space(env))
    finally:
        env.close()
