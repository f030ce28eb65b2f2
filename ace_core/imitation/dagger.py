"""DAgger (Ross et al. 2011): cloning the expert on the states the policy itself reaches.

A policy cloned from the expert's own episodes drifts, once it plays, to states the expert never
showed it, and its errors compound there. DAgger lets the policy play and asks the expert what it
would have done at each state it reached, then clones again on everything gathered so far.

``python -m ace_core dagger --env ENV --dataset MINE --rounds R --seeds S --out DIR``

- ``DIR/round-0``: the policy cloned from ``MINE`` (:func:`ace_core.imitation.cloning.pretrain`), and
  from the further mines given (``--dataset MINE --dataset MORE ...``: e.g. heavier days), which
  every round clones again but does not play again;
- for r in 1..R, ``DIR/mine-r``: the days ``MINE`` played (same split, days and length, seeds
  0..S-1), played by ``round-(r-1)`` and labelled by the expert (a mine with a player,
  :mod:`ace_core.imitation.mining`), then ``DIR/round-r``: cloned from scratch on ``MINE`` (+ ``MORE``) +
  ``mine-1..r``;
- ``DIR/dagger.json``: each round's datasets, decisions and held-out agreement (overall and per
  dataset: the newest mine's is the agreement on the previous policy's own states), rewritten
  after every round;
- ``DIR/checkpoint.pt``: a copy of the last round, so ``sac:DIR`` evaluates the result.

Every round clones the same days held out (days match by scenario name across mines). The loop
resumes: a round whose checkpoint exists is not cloned again, and a mine resumes from the episodes
on disk. The expert defaults to the first mine's and must label like it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ace_core.errors import ConfigError
from ace_core.imitation.cloning import CloneConfig
from ace_core.workers import HERE, Workers

RESULT_NAME = "dagger.json"


@dataclasses.dataclass(frozen=True)
class DaggerSpec:
    env: str
    dataset: str
    """the expert's mine: its directory (or the dataset.npz in it); every round plays its days again"""
    more_datasets: tuple[str, ...] = ()
    """more mines cloned in every round (e.g. heavier days, ``mine --demand-scale``), not played again"""
    rounds: int = 3
    """policy-played mines after the first clone"""
    seeds: int = 1
    """grid seeds 0..seeds-1 of each day in each round's mine"""
    expert: str | None = None
    """the labelling expert; None: the first mine's"""
    clone: CloneConfig = CloneConfig()
    """how every round clones"""
    hidden: int = 256
    """width of the policy's hidden layers"""


def first_mine(spec: DaggerSpec) -> tuple[Path, dict]:
    """(the first mine's directory, its mine.json): which days, how long, which expert."""
    path = Path(spec.dataset)
    directory = path if path.is_dir() else path.parent
    settings = directory / "mine.json"
    if not settings.is_file():
        raise ConfigError(
            f"no mine.json in {directory}: dagger needs the directory of a mine written by "
            "`python -m ace_core mine` (its settings say which days to play again)"
        )
    return directory.resolve(), json.loads(settings.read_text())


def round_spec(spec: DaggerSpec, saved: dict, player: Path):
    """The mine of a DAgger round: the first mine's days, played by ``player``."""
    from ace_core.imitation.mining import MineSpec

    return MineSpec(
        env=spec.env,
        expert=spec.expert,
        split=saved["split"],
        episodes=saved["episodes"],
        seeds=spec.seeds,
        episode_length=saved["episode_length"],
        player=str(player),
        opponent=saved.get("opponent", "env"),
        demand_scale=saved.get("demand_scale", 1.0),
    )


def check(spec: DaggerSpec, saved: dict) -> None:
    """Refuse, before anything is written, what would fail later or label unlike the first mine."""
    from ace_core.imitation.mining import MineSpec

    if spec.rounds < 0 or spec.seeds < 1:
        raise ConfigError(
            f"--rounds ({spec.rounds}) must be at least 0 and --seeds ({spec.seeds}) at least 1"
        )
    from ace_core.imitation.data import DatasetError, array_names

    for more in spec.more_datasets:
        array_names(more)  # a missing or corrupt further mine fails before anything is written
    path, names = array_names(spec.dataset)
    if "day_name" not in names:
        raise DatasetError(
            f"dataset {path} does not name its days (mined before day names), so later mines "
            "cannot hold out the same days; delete its dataset.npz and summary.json and run the "
            "same mine again to rejoin its episodes"
        )
    if saved.get("env") != spec.env:
        raise ConfigError(f"mine {spec.dataset} was mined on {saved.get('env')!r}, not {spec.env!r}")
    expert = MineSpec(env=spec.env, expert=spec.expert).key()["expert"]
    if expert != saved.get("expert"):
        raise ConfigError(
            f"--expert {spec.expert!r} labels unlike the expert of mine {spec.dataset} "
            f"({saved.get('expert')}); give that mine's --expert"
        )


def settings_of(spec: DaggerSpec, mine_dir: Path) -> dict:
    """What a DAgger directory is bound to (every setting but the number of rounds; the expert
    by its settings, however spelled)."""
    from ace_core.imitation.mining import MineSpec

    fields = dataclasses.asdict(spec)
    fields.pop("rounds")
    if fields["clone"]["action_weight"] == 1.0:
        del fields["clone"]["action_weight"]  # as DAgger directories made before the weight existed
    if spec.more_datasets:
        fields["more_datasets"] = [str(Path(d).resolve()) for d in spec.more_datasets]
    else:
        del fields["more_datasets"]  # as DAgger directories of one mine were made
    expert = MineSpec(env=spec.env, expert=spec.expert).key()["expert"]
    return {**fields, "dataset": str(mine_dir), "expert": expert}


def copy_atomic(source: Path, target: Path) -> None:
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".tmp", delete=False) as tmp:
        shutil.copyfile(source, tmp.name)
    os.replace(tmp.name, target)


def run_dagger(spec: DaggerSpec, out: Path, workers: Workers = HERE, log=None) -> dict:
    """Run (or resume) the DAgger loop of the module docstring; returns what dagger.json holds."""
    from ace_core.checkpoint import CHECKPOINT_NAME
    from ace_core.grid.action_set import write_json_atomic
    from ace_core.imitation.cloning import pretrain
    from ace_core.imitation.mining import mine

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    mine_dir, saved = first_mine(spec)
    if spec.expert is None:
        # the first mine's expert by its settings: its spec string is not kept, only the key
        spec = dataclasses.replace(spec, expert=expert_spec(saved.get("expert") or {}))
    check(spec, saved)
    out = Path(out).resolve()
    result_path = out / RESULT_NAME
    settings = settings_of(spec, mine_dir)
    if result_path.exists():
        if json.loads(result_path.read_text()).get("settings") != settings:
            raise ConfigError(f"{out} holds a DAgger run of other settings; choose another --out")
    elif out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} exists and is not a DAgger directory; choose another --out")
    out.mkdir(parents=True, exist_ok=True)

    datasets, rounds = [mine_dir, *(Path(d).resolve() for d in spec.more_datasets)], []
    for r in range(spec.rounds + 1):
        run = out / f"round-{r}"
        entry: dict = {"round": r, "dir": str(run)}
        if r > 0:
            mine_spec = round_spec(spec, saved, out / f"round-{r - 1}")
            summary = mine(mine_spec, out / f"mine-{r}", workers, log)
            datasets.append(out / f"mine-{r}")
            entry["mine"] = {k: summary[k] for k in ("dir", "episodes", "decisions", "steps", "game_overs")}
        if (run / CHECKPOINT_NAME).exists():
            log(f"round {r}: reusing {run}")
        else:
            log(f"round {r}: cloning on {len(datasets)} dataset(s)")
            pretrain(spec.env, [str(d) for d in datasets], run, spec.clone, spec.hidden)
        report = json.loads((run / "pretrain.json").read_text())
        entry.update(
            datasets=[str(d) for d in datasets],
            decisions=report.get("decisions", report["train_decisions"] + report["held_out_decisions"]),
            train_decisions=report["train_decisions"],
            held_out_decisions=report["held_out_decisions"],
            held_out_agreement=report["agreement_after"],
            held_out_agreement_by_dataset=report.get(
                "held_out_agreement_by_dataset", [report["agreement_after"]]
            ),
        )
        rounds.append(entry)
        copy_atomic(run / CHECKPOINT_NAME, out / CHECKPOINT_NAME)
        result = {"settings": settings, "rounds": rounds, "result": str(run)}
        write_json_atomic(result, result_path)
        log(
            f"round {r}: held-out agreement {entry['held_out_agreement']:.3f} on {entry['decisions']} decisions"
        )
    return result


def expert_spec(config: dict) -> str:
    """The ``greedy:key=value,...`` spec of an expert's key (:meth:`ExpertConfig.key`), the
    action set given back by path when the key holds only its hash (then the caller's --expert
    is needed)."""
    settings = {k: v for k, v in config.items() if k != "actions"}
    if config.get("actions"):
        raise ConfigError(
            "the first mine's expert plays an action set, which its mine.json names only by hash; "
            "give --expert greedy:actions=FILE,... as that mine was made"
        )
    return "greedy:" + ",".join(f"{k}={v}" for k, v in settings.items()) if settings else "greedy"
