"""Mining: the expert over the train scenarios, fanned out with Ray, resumable, cached.

``python -m ace_core mine --env ENV [--expert greedy...] [--player RUN] [--ray-address ADDR] [--workers N] [--out DIR]``

With ``--player RUN`` (a policy's run directory or checkpoint) the mine is a DAgger round: the
policy plays and the expert labels every state it reaches (:func:`~ace_core.imitation.data.play_episode`);
its features are the policy's (its feature scale and layout), so the data are the policy's own inputs.

Each (scenario, seed) episode is played by a Ray actor (one env, action space and expert per
worker process, built once); the driver writes its record to ``DIR/episodes/<scenario>-seed<k>.npz``
atomically (:mod:`ace_core.imitation.data`), and ``<that file>.playing`` names the worker (host and
pid) while it plays. A mine that stops (Ctrl-C, a killed machine) resumes where it
stopped: episodes already on disk are not played again. A worker process that dies loses only the
episode it was playing, which is given to a fresh worker (twice at most). Once every episode is
on disk the driver writes

- ``action_set.json``: the topology actions the expert played, most frequent first, with the share
  of its topology decisions the top-10/25/50/... cover (:mod:`ace_core.grid.action_set`);
- ``dataset.npz``: the imitation dataset (features, legal mask, expert action, simulated outcomes
  of every candidate);
- ``summary.json`` last: the mark of a complete mine.

``DIR`` defaults to ``$GRIDACE_CACHE_DIR/mines/<env>-<split>-<hash of the settings>``, so a mine is
reused by every run that asks for the same env, split, expert and episodes. ``mine.json`` holds
the settings; a directory holding another mine is refused.

Ray starts locally by default (``ray.init(num_cpus=workers)``, :mod:`ace_core.workers`);
``--ray-address`` joins a cluster (``ray start --head`` on one machine, ``ray start
--address=HEAD:6379`` on the others, then ``--ray-address HEAD:6379`` or ``auto``); every machine
needs this package and the env.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import time
import zipfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ace_core.errors import ConfigError
from ace_core.grid.action_set import save_action_set, write_json_atomic
from ace_core.grid.action_space import cache_dir
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, SPLITS, Scenario
from ace_core.imitation.data import decisions_digest, join_episodes, save_npz_atomic
from ace_core.imitation.mine_files import (  # noqa: F401 - MineError and episode_file are the mine's API
    ACTION_SET,
    SUMMARY,
    MineError,
    episode_file,
    finished,
    read_summary,
)
from ace_core.imitation.ray_mining import run_with_ray
from ace_core.workers import HERE, Workers

MINE_FORMAT = 1


@dataclass(frozen=True)
class MineSpec:
    """What a mine is of: the settings the CLI's ``mine`` flags and the web app's mine form offer
    (their help texts are these docstrings)."""

    env: str
    """the grid whose days the expert plays"""
    expert: str = "greedy"
    """the expert: greedy, greedy:BUDGET or greedy:key=value,... (its settings: ace_core/config/expert.py)"""
    split: str = "train"
    """the scenarios mined: train, validation or test"""
    episodes: int | None = None
    """the first N scenarios of the split (none given: all of them)"""
    seeds: int = 1
    """each scenario is played with grid seeds 0..seeds-1"""
    episode_length: int = DEFAULT_EPISODE_LENGTH
    """steps per scenario (288 = one day)"""
    player: str = ""
    """a policy (run directory or checkpoint) that plays while the expert labels (DAgger); "": the expert plays"""
    opponent: str = "env"
    """line attacks in the mined episodes: env (the env's own opponent), none, random-line (grid2op's RandomLineOpponent) or storm (an attack every few hours), with settings after a colon (ace_core/grid/opponents.py)"""
    demand_scale: float = 1.0
    """every load and production of the mined days times this (0.8-1.3; 1.05: heavier days, more decisions that matter; ace_core/grid/demand.py)"""

    def key(self) -> dict:
        """What identifies a mine: the expert by its parsed settings (``greedy`` and
        ``greedy:3000`` are one mine) and by the content of its action set, if any; the player,
        if any, by the content of its policy file (a mine without one keeps its old key)."""
        from ace_core.config.expert import parse_expert_spec
        from ace_core.grid.envs import dataset_fingerprint

        key = {"format": MINE_FORMAT, **asdict(self)}
        if self.player:
            from ace_core.checkpoint import policy_file

            path = policy_file(Path(self.player))
            key["player"] = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""
        else:
            del key["player"]
            # the expert's mines hold today's policy inputs (a player's mine holds its player's)
            key["features"] = "overflow"
        if self.opponent == "env":
            del key["opponent"]  # a mine of the env as it is keeps the key it had before opponents
        if self.demand_scale == 1.0:
            del key["demand_scale"]  # and so does a mine of the days as they are
        data = dataset_fingerprint(self.env)
        if data:
            key["data"] = data  # a dataset with more days (downloaded or generated) splits otherwise
        try:
            config = parse_expert_spec(self.expert.partition(":")[2]).key()
        except ConfigError:
            return key  # refused later by prepare(), with the accepted settings
        if config["actions"]:
            path = Path(config["actions"])
            config["actions"] = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""
        key["expert"] = config
        if config.get("flex"):
            key["moves"] = "played"  # its mines play the expert's continuous moves (made before: not)
        return key

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:12]

    def default_dir(self) -> Path:
        return cache_dir() / "mines" / f"{self.env}-{self.split}-{self.digest()}"


class EpisodeWorker:
    """What a Ray actor holds: the action space, the expert's settings and the feature builder.

    One env plays every episode of the worker: :func:`~ace_core.grid.scenarios.reset_to` starts
    each as a fresh env would, so an episode's record depends neither on the episodes its worker
    played before nor on the worker count.
    """

    def __init__(self, spec: MineSpec, features: dict, player: dict | None = None) -> None:
        # no torch here unless a player is set: a worker imports only the grid and the expert
        from ace_core.grid.action_space import build_action_space
        from ace_core.grid.envs import make_env
        from ace_core.grid.features import FeatureBuilder

        self.spec = spec
        self.env = env = make_env(spec.env, opponent=spec.opponent, demand_scale=spec.demand_scale)
        self.space = build_action_space(env)
        self.features = FeatureBuilder.from_state(env, features)
        self.player = None
        if player is not None:
            import torch

            from ace_core.agents.sac import SacAgent, sac_from_state

            torch.set_num_threads(1)  # one Ray CPU per worker
            sac, space, features, config = sac_from_state(player, env, self.space, spec.player)
            # the agent only chooses (never acts), so the first env's action space serves every episode
            self.player = SacAgent(env, space, sac, features, config.rho_threshold).choose

    def where(self) -> str:
        """``host pid`` of this worker process."""
        return f"{socket.gethostname()} {os.getpid()}"

    def play(self, scenario: Scenario, seed: int) -> dict:
        """The episode's record; the driver writes it (workers on other machines share no disk)."""
        from ace_core.agents.expert import expert_from_spec
        from ace_core.imitation.data import play_episode

        expert = expert_from_spec(self.spec.expert, self.space, self.env.action_space)
        return play_episode(self.env, self.space, expert, self.features, scenario, seed, self.player)


def prepare(spec: MineSpec) -> tuple[list[tuple[Scenario, int]], object, dict, dict | None]:
    """Validate everything a mine needs before any file or Ray process exists: (episodes, action
    space, the features' settings, the player's policy state or None)."""
    from ace_core.agents.expert import expert_from_spec
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.demand import check_demand_scale
    from ace_core.grid.envs import make_env
    from ace_core.grid.features import FeatureBuilder
    from ace_core.grid.scenarios import scenarios

    if spec.split not in SPLITS:
        raise MineError(f"unknown split {spec.split!r}; accepted: {', '.join(SPLITS)}")
    if spec.seeds < 1 or (spec.episodes is not None and spec.episodes < 1):
        raise MineError(f"--seeds ({spec.seeds}) and --episodes ({spec.episodes}) must be at least 1")
    if spec.expert.partition(":")[0] != "greedy":
        raise MineError(
            f"unknown expert {spec.expert!r}; accepted: greedy, greedy:BUDGET, greedy:key=value,..."
        )
    check_demand_scale(spec.demand_scale)
    # the days as they are: the feature scale is the policy's, whatever the mined days' demand
    env = make_env(spec.env, opponent=spec.opponent)  # an unknown opponent fails here
    space = build_action_space(env)
    expert_from_spec(spec.expert, space, env.action_space)  # a bad setting or a foreign set fails now
    chosen = scenarios(env, spec.split, spec.episode_length)[: spec.episodes]
    if not chosen:
        raise MineError(f"env {spec.env!r} has no {spec.split} scenarios")
    features = FeatureBuilder(env).state_dict()
    player = load_player(spec.player, space) if spec.player else None
    if player is not None:
        # the data are the player's inputs: a DAgger mine aggregates with the player's own mine
        features = FeatureBuilder.for_policy(env, player).state_dict()
    return [(s, seed) for seed in range(spec.seeds) for s in chosen], space, features, player


def load_player(path: str, space) -> dict:
    """What a worker needs of the player's checkpoint (no replay buffer), refused when it was
    made on another grid or on an action subset (its indices would not be the mine's)."""
    from ace_core.checkpoint import check_same_space, load_checkpoint

    state = load_checkpoint(Path(path))
    if state.get("moves"):
        raise MineError(
            f"player {path} also plays continuous moves; a mine's actions index the topology space: "
            "give a policy cloned without --moves"
        )
    if state.get("subset") is not None:
        raise MineError(
            f"player {path} acts on an action subset; a mine's actions index the whole space: "
            "give a policy trained without --action-subset (e.g. from `pretrain`)"
        )
    check_same_space(state, space.fingerprint(), path)
    return {k: state[k] for k in ("config", "fingerprint", "subset", "sac", "features") if k in state}


def record(spec: MineSpec) -> dict:
    """What mine.json and the summary say of a mine: its key, plus the player's file if any."""
    from ace_core.checkpoint import policy_file

    player = {"player_file": str(policy_file(Path(spec.player)).resolve())} if spec.player else {}
    return {**spec.key(), **player}


def claim_dir(out: Path, spec: MineSpec) -> bool:
    """Take ``out`` for this mine; True when a complete mine of the same settings is already there."""
    settings = out / "mine.json"
    if settings.exists():
        try:
            saved = json.loads(settings.read_text())
        except ValueError:
            saved = None
        if isinstance(saved, dict):
            saved.pop("player_file", None)  # the player is keyed by content, wherever its file is
        if saved != spec.key():
            raise MineError(f"{out} holds a mine of other settings ({saved}); choose another --out")
        return finished(out)
    if out.exists() and any(out.iterdir()):
        raise MineError(f"{out} exists and is not a mine directory; choose another --out")
    write_json_atomic(record(spec), settings)
    return False


def mine(spec: MineSpec, out: Path | None = None, workers: Workers = HERE, log=None) -> dict:
    """Run (or resume, or reuse) the mine of ``spec`` on ``workers``; returns its summary."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    workers.check()  # before the directory is claimed
    episodes, space, features, player = prepare(spec)
    out = (Path(out) if out else spec.default_dir()).resolve()  # Ray workers have their own cwd
    created = not out.exists()
    if claim_dir(out, spec):
        log(f"reusing the complete mine in {out}")
        return read_summary(out)
    try:
        (out / "episodes").mkdir(exist_ok=True)
        todo = [(s, seed) for s, seed in episodes if not episode_file(out, s, seed).exists()]
        log(
            f"mining {spec.env}: {len(episodes)} episodes, {len(episodes) - len(todo)} already on disk, {workers.count} workers"
        )
        started = time.perf_counter()
        played = run_with_ray(EpisodeWorker, spec, out, todo, features, workers, log, player)
        return finish(spec, out, space, episodes, played, time.perf_counter() - started)
    except BaseException:
        if created and not any((out / "episodes").glob("*.npz")):
            shutil.rmtree(out, ignore_errors=True)  # nothing mined: leave nothing behind
        raise


def finish(spec: MineSpec, out: Path, space, episodes, played: int, seconds: float) -> dict:
    """Join the episode files into the action set and the dataset, then write the summary."""
    records = []
    for scenario, seed in episodes:
        path = episode_file(out, scenario, seed)
        try:
            with np.load(path, allow_pickle=False) as data:
                records.append({k: data[k] for k in data.files})
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise MineError(
                f"episode file {path} is corrupt ({exc}); delete it and run the mine again to replay it"
            ) from exc
    dataset = join_episodes(records)
    topology = dataset["action"][dataset["action"] >= space.first_topology]
    counts = Counter(int(i) for i in topology)
    action_set = save_action_set(space, list(counts.items()), len(topology), out / ACTION_SET)
    save_npz_atomic(out / "dataset.npz", **dataset)
    summary = {
        "mine": record(spec),
        "dir": str(out),
        "episodes": len(episodes),
        "episodes_played_now": played,
        "decisions": int(len(dataset["action"])),
        "decisions_digest": decisions_digest(dataset),
        "topology_decisions": int(len(topology)),
        "real_action_share": float(np.mean(dataset["action"] != 0)) if len(dataset["action"]) else 0.0,
        "distinct_topologies": len(counts),
        "coverage": action_set["coverage"],
        "simulations": int(len(dataset["cand_index"])),
        "steps": int(sum(int(r["steps"]) for r in records)),
        "game_overs": int(sum(bool(r["game_over"]) for r in records)),
        "episode_seconds": float(sum(float(r["seconds"]) for r in records)),
        "seconds": seconds,
    }
    write_json_atomic(summary, out / SUMMARY)
    return summary
