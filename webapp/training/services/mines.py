"""Mines of expert decisions started from the web app: the launch (an engineer's decision,
audited), then what only a mine's worker records: how many episodes it plays. Its start,
heartbeat, finish and failure are those every job shares (:mod:`webapp.jobs.services`). The mine
itself is :func:`ace_core.imitation.mining.mine` writing its directory; the rows say who asked for
it, with which settings (``spec``: the :class:`~ace_core.imitation.mining.MineSpec` as a dict),
and how it is going. A failed mine is started again with the same settings (:func:`mine_launch`
refuses only a queued, running or finished one): the new row's mine resumes from the episodes
already on disk."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from ace_core.errors import ConfigError
from ace_core.grid.demand import check_demand_scale
from ace_core.grid.opponents import opponent_kwargs
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH
from ace_core.imitation.mine_files import finished
from webapp.audit.services import audit_record
from webapp.jobs.models import ACTIVE_STATUSES
from webapp.training.errors import MineStateError
from webapp.training.models import Mine
from webapp.training.selectors.mines import mines_dir
from webapp.training.selectors.runs import env_names
from webapp.training.tasks import mine_run

if TYPE_CHECKING:
    from ace_core.imitation.mining import MineSpec

MINE_SPLIT = "train"
"""the web app mines the train days: the scenarios a run's imitation start learns from"""
MAX_SEEDS = 50
MAX_EPISODE_LENGTH = 8064
EXPERT_SYNTAX = "greedy, greedy:BUDGET or greedy:key=value,..."


def mine_spec(mine: Mine) -> MineSpec:
    """The :class:`ace_core.imitation.mining.MineSpec` a row stands for."""
    from ace_core.imitation.mining import MineSpec

    return MineSpec(**mine.spec)


def check_expert(expert: str) -> str:
    """The expert spec, or a ConfigError that gives the accepted syntax."""
    from ace_core.config.expert import parse_expert_spec

    name, _, settings = expert.strip().partition(":")
    if name != "greedy":
        raise ConfigError(f"expert {expert!r} is not understood; accepted: {EXPERT_SYNTAX}")
    parse_expert_spec(settings)  # its errors name the setting and list the keys
    return expert.strip()


def _checked_spec(
    *,
    env: str,
    expert: str,
    seeds: int,
    episodes: int | None,
    episode_length: int,
    opponent: str,
    demand_scale: float,
) -> MineSpec:
    """The MineSpec of a mine of the train days with these settings, or a ConfigError that says
    which setting is wrong and what is accepted."""
    from ace_core.imitation.mining import MineSpec

    if env not in env_names():
        raise ConfigError(f"unknown env {env!r}; available here: {', '.join(env_names())}")
    expert = check_expert(expert)
    if isinstance(seeds, bool) or not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"seeds={seeds!r} is out of range; accepted: 1 to {MAX_SEEDS}")
    if episodes is not None and not 1 <= episodes <= 10_000:
        raise ConfigError(f"episodes={episodes!r} is out of range; accepted: 1 to 10000, or empty for all")
    if not 2 <= episode_length <= MAX_EPISODE_LENGTH:
        raise ConfigError(
            f"episode_length={episode_length!r} is out of range; accepted: 2 to {MAX_EPISODE_LENGTH}"
        )
    opponent_kwargs(env, opponent)  # an unknown opponent, or random-line on a grid without its lines
    return MineSpec(
        env=env,
        expert=expert,
        split=MINE_SPLIT,
        episodes=episodes,
        seeds=seeds,
        episode_length=episode_length,
        opponent=opponent,
        demand_scale=check_demand_scale(demand_scale),
    )


@transaction.atomic
def mine_launch(
    *,
    env: str,
    expert: str,
    seeds: int,
    launched_by: AbstractBaseUser,
    episodes: int | None = None,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    opponent: str = "env",
    demand_scale: float = 1.0,
) -> Mine:
    """Queue a mine of the train days on the ``training`` queue (Ray on the worker's machine, one
    Ray worker). Raises ConfigError on bad settings, MineStateError when this mine is already
    queued, running or finished."""
    spec = _checked_spec(
        env=env,
        expert=expert,
        seeds=seeds,
        episodes=episodes,
        episode_length=episode_length,
        opponent=opponent,
        demand_scale=demand_scale,
    )
    # the directory the trainer's pretrain_mine=auto would use for the same settings
    out = (mines_dir() / spec.default_dir().name).resolve()
    active = Mine.objects.select_for_update().filter(name=out.name, status__in=ACTIVE_STATUSES)
    if active.exists():
        raise MineStateError(f"mine {out.name} is already {active.first().status}; follow it on its page")
    if finished(out):
        raise MineStateError(
            f"mine {out.name} is already finished with these settings; open it on the mines page"
        )
    row = Mine.objects.create(
        name=out.name, env=env, spec=asdict(spec), out_dir=str(out), launched_by=launched_by
    )
    row.task_id = str(mine_run.enqueue(mine_id=row.pk).id)
    row.save(update_fields=["task_id"])
    audit_record(
        actor=launched_by, action="mine.launch", target=row, after={**row.spec, "out_dir": row.out_dir}
    )
    return row


def mine_total(*, mine_id: int, episodes_total: int) -> None:
    """How many (scenario, seed) episodes the mine plays: its page's progress is out of this."""
    Mine.objects.filter(pk=mine_id).update(episodes_total=episodes_total)
