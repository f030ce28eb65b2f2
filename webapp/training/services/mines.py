"""Mines of expert decisions started from the web app: the launch (an engineer's decision,
audited), then what the mining worker records: started, its heartbeat, how many episodes it plays,
finished or failed. The mine itself is :func:`ace_core.mining.mine` writing its directory; the rows
say who asked for it and how it is going. A failed mine is started again with the same settings
(:func:`mine_launch` refuses only a queued, running or finished one): the new row's mine resumes
from the episodes already on disk."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core.errors import ConfigError
from ace_core.grid.demand import check_demand_scale
from ace_core.grid.opponents import opponent_kwargs
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH
from webapp.audit.services import audit_record
from webapp.training.errors import MineStateError
from webapp.training.models import Mine, MineStatus
from webapp.training.selectors import env_names, mines_dir

MINE_SPLIT = "train"
"""the web app mines the train days: the scenarios a run's imitation start learns from"""
MAX_SEEDS = 50
MAX_EPISODE_LENGTH = 8064
ERROR_MAX_LENGTH = 4000
EXPERT_SYNTAX = "greedy, greedy:BUDGET or greedy:key=value,..."


def mine_spec(mine: Mine):
    """The :class:`ace_core.mining.MineSpec` a row stands for."""
    from ace_core.mining import MineSpec

    return MineSpec(
        env=mine.env,
        expert=mine.expert,
        split=mine.split,
        episodes=mine.episodes,
        seeds=mine.seeds,
        episode_length=mine.episode_length,
        opponent=mine.opponent,
        demand_scale=mine.demand_scale,
    )


def check_expert(expert: str) -> str:
    """The expert spec, or a ConfigError that gives the accepted syntax."""
    from ace_core.expert import parse_expert_spec

    name, _, settings = expert.strip().partition(":")
    if name != "greedy":
        raise ConfigError(f"expert {expert!r} is not understood; accepted: {EXPERT_SYNTAX}")
    parse_expert_spec(settings)  # its errors name the setting and list the keys
    return expert.strip()


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
    from webapp.training.tasks import mine_run

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
    demand_scale = check_demand_scale(demand_scale)
    row = Mine(
        env=env,
        expert=expert,
        split=MINE_SPLIT,
        seeds=seeds,
        episodes=episodes,
        episode_length=episode_length,
        opponent=opponent,
        demand_scale=demand_scale,
        launched_by=launched_by,
    )
    # the directory the trainer's pretrain_mine=auto would use for the same settings
    out = (mines_dir() / mine_spec(row).default_dir().name).resolve()
    row.name, row.out_dir = out.name, str(out)
    active = Mine.objects.select_for_update().filter(
        name=row.name, status__in=(MineStatus.QUEUED, MineStatus.RUNNING)
    )
    if active.exists():
        raise MineStateError(f"mine {row.name} is already {active.first().status}; follow it on its page")
    if (out / "summary.json").is_file():
        raise MineStateError(
            f"mine {row.name} is already finished with these settings; open it on the mines page"
        )
    row.save()
    result = mine_run.enqueue(mine_id=row.pk)
    row.task_id = str(result.id)
    row.save(update_fields=["task_id"])
    audit_record(
        actor=launched_by,
        action="mine.launch",
        target=row,
        after={
            "env": env,
            "expert": expert,
            "split": MINE_SPLIT,
            "seeds": seeds,
            "episodes": episodes,
            "episode_length": episode_length,
            "opponent": opponent,
            "demand_scale": demand_scale,
            "out_dir": row.out_dir,
        },
    )
    return row


@transaction.atomic
def mine_start(*, mine_id: int) -> Mine | None:
    """The worker claims a queued mine; None when it is no longer queued."""
    mine = Mine.objects.select_for_update().filter(pk=mine_id).first()
    if mine is None or mine.status != MineStatus.QUEUED:
        return None
    mine.status = MineStatus.RUNNING
    mine.started_at = mine.heartbeat_at = timezone.now()
    mine.save(update_fields=["status", "started_at", "heartbeat_at"])
    return mine


def mine_heartbeat(*, mine_id: int) -> bool:
    """Stamp a running mine's heartbeat; False when it is no longer running (the watchdog failed
    it while this worker was frozen, say)."""
    return bool(
        Mine.objects.filter(pk=mine_id, status=MineStatus.RUNNING).update(heartbeat_at=timezone.now())
    )


def mine_total(*, mine_id: int, episodes_total: int) -> None:
    """How many (scenario, seed) episodes the mine plays: its page's progress is out of this."""
    Mine.objects.filter(pk=mine_id).update(episodes_total=episodes_total)


def mine_finish(*, mine_id: int) -> Mine | None:
    """Mark the worker's running mine succeeded; None (and nothing changed) when it is no longer
    running: the watchdog failed it while its worker was frozen, and it may have been started
    again as a new mine since, which that worker must not overwrite."""
    return _end(mine_id, MineStatus.SUCCEEDED, "")


def mine_fail(*, mine_id: int, error: str) -> Mine | None:
    """Mark the worker's running mine failed; None when it is no longer running (see :func:`mine_finish`)."""
    return _end(mine_id, MineStatus.FAILED, error[:ERROR_MAX_LENGTH])


@transaction.atomic
def _end(mine_id: int, status: str, error: str) -> Mine | None:
    mine = Mine.objects.select_for_update().filter(pk=mine_id, status=MineStatus.RUNNING).first()
    if mine is None:
        return None
    mine.status = status
    mine.error = error
    mine.finished_at = timezone.now()
    mine.save(update_fields=["status", "error", "finished_at"])
    return mine
