"""Imitation data: the expert's decisions on one episode, and the dataset that joins many.

:func:`play_episode` plays one scenario with the expert (:mod:`ace_core.agents.expert`) and records, at
every decision (a step where max rho reached the expert's threshold):

==================  ===================  ================================================
array               shape                value
==================  ===================  ================================================
features            (D, F) float32       the policy's input (:mod:`ace_core.grid.features`)
legal               (D, ceil(N/8)) uint8 packed legality mask over the N actions, no-ops in
                                         disguise masked (``np.unpackbits(..., count=N)``)
action              (D,) int64           the expert's action
step                (D,) int64           episode step of the decision
cand_offsets        (D+1,) int64         decision d's candidates are ``cand_index[o[d]:o[d+1]]``
cand_index          (C,) int64           candidates the expert simulated
cand_max_rho        (C,) float32         their simulated max rho (inf: game over, illegal)
played              (T,) int64           the action played at every step (replays the episode)
move                (D,) str             the continuous move the expert played with its
                                         action, as JSON (empty: none; ``flex`` experts)
==================  ===================  ================================================

plus the scenario, seed, steps played, whether it ended in a game over, the action space's
fingerprint and the features' settings (``load_scale``, and ``overflow``: whether they hold the
overflow block of :mod:`ace_core.grid.features`; absent in mines made before it: no).

With a ``player`` (a policy, obs -> action index, e.g. :meth:`ace_core.agents.sac.SacAgent.choose`)
the episode is DAgger's (Ross et al. 2011): the expert still searches at every step and its label
is recorded exactly as above, but the action played is the player's, so the decisions are the
states the *policy* reaches, labelled with what the expert would do there. ``played`` holds the
player's actions (the episode still replays); ``action`` and the candidates stay the expert's.
An expert that goes beyond topology (``flex``) plays its continuous moves too, so the states are
its own; ``played`` then replays the topology only.

A joined dataset adds, per decision, its ``episode`` and ``day`` (index into ``day_name``, the
scenario names), so that datasets of several mines line up by day (:func:`concat_datasets`).
Files are written atomically (temp file, then rename), so a file that exists is complete.
:func:`load_dataset` reads a dataset back and refuses a missing, corrupt or foreign one;
:func:`check_dataset` refuses the same without reading the arrays.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ace_core.agents.expert import Expert
from ace_core.config.checks import MOVE_LABELS
from ace_core.errors import ConfigError
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import disguised_noops
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.flex.discrete import discrete_move, move_json, moves_from_json
from ace_core.grid.flex.moves import FlexMove
from ace_core.grid.scenarios import Scenario, reset_to

DATASET_KEYS = ("features", "legal", "action", "cand_offsets", "cand_index", "cand_max_rho")


class DatasetError(ConfigError):
    """An imitation dataset that is missing, corrupt or made on another grid."""


def policy_legal_mask(obs, space: ActionSpace) -> np.ndarray:
    """Legal actions for a policy: the space's legality mask without the no-ops in disguise."""
    return space.action_mask(obs) & ~disguised_noops(obs, space)


def save_npz_atomic(path: Path, **arrays) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as tmp:
        np.savez_compressed(tmp, **arrays)
    os.replace(tmp.name, path)
    return path


def play_episode(
    env,
    space: ActionSpace,
    expert: Expert,
    features: FeatureBuilder,
    scenario: Scenario,
    seed: int,
    player: Callable[[object], int] | None = None,
) -> dict:
    """Play ``scenario`` with ``expert`` (or, labelled by the expert, with ``player``) and return
    the arrays of the module docstring."""
    started = time.perf_counter()
    expert.reset()  # what the search learns stays within an episode: files do not depend on order
    obs, done = reset_to(env, scenario, seed), False
    rows: dict[str, list] = {k: [] for k in ("features", "legal", "action", "step", "index", "rho", "move")}
    played: list[int] = []
    while not done:
        search = expert.search(obs)
        if search.stressed:
            rows["features"].append(features(obs))
            rows["legal"].append(np.packbits(policy_legal_mask(obs, space)))
            rows["action"].append(search.action)
            rows["step"].append(len(played))
            rows["index"].append(np.asarray(search.candidates, dtype=np.int64))
            rows["rho"].append(np.asarray(search.max_rho, dtype=np.float32))
            rows["move"].append(move_json(search.move))
        action = search.action if player is None else int(player(obs))
        played.append(action)
        step_action = space.to_grid2op(action, env.action_space)
        if player is None and search.move:
            step_action = step_action + search.move.to_grid2op(env.action_space)
        obs, _, done, info = env.step(step_action)
    n_bytes = (space.n + 7) // 8
    return {
        "features": np.asarray(rows["features"], dtype=np.float32).reshape(-1, features.size),
        "legal": np.asarray(rows["legal"], dtype=np.uint8).reshape(-1, n_bytes),
        "action": np.asarray(rows["action"], dtype=np.int64),
        "step": np.asarray(rows["step"], dtype=np.int64),
        "cand_offsets": np.concatenate([[0], np.cumsum([len(i) for i in rows["index"]])]).astype(np.int64),
        "cand_index": np.concatenate([np.zeros(0, np.int64), *rows["index"]]),
        "cand_max_rho": np.concatenate([np.zeros(0, np.float32), *rows["rho"]]),
        "played": np.asarray(played, dtype=np.int64),
        "move": np.asarray(rows["move"], dtype=str),
        "scenario": np.asarray(scenario.name),
        "seed": np.asarray(seed),
        "steps": np.asarray(len(played)),
        "game_over": np.asarray(bool(info.get("exception"))),
        "fingerprint": np.asarray(space.fingerprint()),
        "load_scale": features.load_scale,
        "overflow": np.asarray(features.overflow),
        "seconds": np.asarray(time.perf_counter() - started),
    }


DIGESTED = ("features", "legal", "action")
"""what a policy cloned from a dataset learns from: the states, their legal actions, the expert's"""


def decisions_digest(arrays: dict) -> str:
    """16 hex digits over a dataset's decisions (:data:`DIGESTED`, bit for bit): two machines whose
    mines have the same digest gave the clone the same inputs, so a clone that differs between
    them differs by its kernels, not by its mines."""
    digest = hashlib.sha256()
    for key in DIGESTED:
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"{key} {array.dtype} {array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


class Dataset:
    """An imitation dataset in memory: decisions of many episodes, concatenated."""

    def __init__(self, arrays: dict, n_actions: int) -> None:
        self.arrays = arrays
        self.n_actions = n_actions

    def __len__(self) -> int:
        return len(self.arrays["action"])

    @property
    def features(self) -> np.ndarray:
        return self.arrays["features"]

    @property
    def actions(self) -> np.ndarray:
        return self.arrays["action"]

    @property
    def load_scale(self) -> np.ndarray:
        return self.arrays["load_scale"]

    @property
    def overflow(self) -> bool:
        """Whether the features hold the overflow block (mines made before it: no)."""
        return bool(self.arrays.get("overflow", False))

    @property
    def feature_state(self) -> dict:
        """The settings of the policy inputs these features are (:meth:`FeatureBuilder.state_dict`)."""
        return {"load_scale": self.load_scale, "overflow": self.overflow}

    def digest(self) -> str:
        return decisions_digest(self.arrays)

    def legal(self, rows=slice(None)) -> np.ndarray:
        """Unpacked legality masks of the given decisions, (n, N) bool."""
        return np.unpackbits(self.arrays["legal"][rows], axis=1, count=self.n_actions).astype(bool)

    def decision_moves(self, space: ActionSpace, labels: str = "all") -> list[FlexMove | None]:
        """The continuous move of each decision (None where none): every move the expert played
        with ``labels="all"``; with ``"alone"`` only those it played without a topology action
        of ``space`` (the others keep their topology action)."""
        if labels not in MOVE_LABELS:
            raise ConfigError(
                f"move labels {labels!r} are not accepted; choose one of: {', '.join(MOVE_LABELS)}"
            )
        moves = moves_from_json(move_texts(self.arrays))
        if labels == "alone":
            moves = [move if not space.is_topology(int(a)) else None for move, a in zip(moves, self.actions)]
        return moves

    def played_moves(self, space: ActionSpace, labels: str = "all") -> list[FlexMove]:
        """The continuous moves the expert played at its decisions (:meth:`decision_moves`)."""
        return [move for move in self.decision_moves(space, labels) if move is not None]

    def with_moves(self, space: ActionSpace, gen_pmax, labels: str = "all") -> Dataset:
        """The dataset for a policy over ``space``, this dataset's space with continuous moves
        (:meth:`ActionSpace.with_moves`): a decision where the expert played a move
        (:meth:`decision_moves` with ``labels``) whose discrete form
        (:func:`~ace_core.grid.flex.discrete.discrete_move`) is one of the space's is labelled
        with that move's index, the others keep their action; every move is marked legal (the
        mine did not judge them)."""
        index = {move: space.first_move + j for j, move in enumerate(space.moves)}
        actions = self.actions.copy()
        for row, move in enumerate(self.decision_moves(space, labels)):
            label = index.get(discrete_move(move, gen_pmax)) if move is not None else None
            if label is not None:
                actions[row] = label
        legal = np.concatenate([self.legal(), np.ones((len(self), len(space.moves)), dtype=bool)], axis=1)
        arrays = {**self.arrays, "action": actions, "legal": np.packbits(legal, axis=1)}
        return Dataset(arrays, space.n)

    def candidates(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(candidate indices, their simulated max rho) of decision ``row``."""
        start, end = self.arrays["cand_offsets"][row], self.arrays["cand_offsets"][row + 1]
        return self.arrays["cand_index"][start:end], self.arrays["cand_max_rho"][start:end]


def move_texts(arrays: dict) -> np.ndarray:
    """The continuous move of each decision as JSON (empty where none, and in mines made before
    moves were recorded)."""
    moves = arrays.get("move")
    return np.asarray(moves if moves is not None else np.full(len(arrays["action"]), ""), dtype=str)


def join_episodes(episodes: list[dict]) -> dict:
    """One dataset from episode records (candidate offsets shifted, episode and day of each decision)."""
    offsets, shift = [np.zeros(1, np.int64)], 0
    for record in episodes:
        offsets.append(record["cand_offsets"][1:] + shift)
        shift += int(record["cand_offsets"][-1])
    first = episodes[0]
    days = list(dict.fromkeys(str(r["scenario"]) for r in episodes))
    return {
        **{k: np.concatenate([r[k] for r in episodes]) for k in ("features", "legal", "action", "step")},
        "cand_offsets": np.concatenate(offsets),
        "cand_index": np.concatenate([r["cand_index"] for r in episodes]),
        "cand_max_rho": np.concatenate([r["cand_max_rho"] for r in episodes]),
        "episode": np.concatenate([np.full(len(r["action"]), i) for i, r in enumerate(episodes)]),
        # the scenario (day) of each decision: one day played with several seeds is one day
        "day": np.concatenate([np.full(len(r["action"]), days.index(str(r["scenario"]))) for r in episodes]),
        "day_name": np.asarray(days, dtype=str),
        "move": np.concatenate([move_texts(r) for r in episodes]),
        "fingerprint": first["fingerprint"],
        "load_scale": first["load_scale"],
        "overflow": np.asarray(bool(first.get("overflow", False))),
    }


def dataset_file(path) -> Path:
    """The ``dataset.npz`` at ``path`` (the file, or the mine directory holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "dataset.npz"
    if not path.is_file():
        raise DatasetError(
            f"no imitation dataset at {path}; give the dataset.npz (or directory) a mine wrote"
        )
    return path


UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)
"""what reading a missing, truncated or foreign ``.npz`` raises"""


def same_features(a: dict, b: dict) -> bool:
    """Whether two feature settings (:meth:`FeatureBuilder.state_dict`: the load scale, and the
    overflow block, absent before it existed) give the same policy inputs."""
    scale_a, scale_b = np.asarray(a["load_scale"]), np.asarray(b["load_scale"])
    same_scale = scale_a.shape == scale_b.shape and bool(np.allclose(scale_a, scale_b, rtol=1e-6))
    return same_scale and bool(a.get("overflow", False)) == bool(b.get("overflow", False))


def array_names(path) -> tuple[Path, list[str]]:
    """(the dataset file at ``path``, the names of its arrays), without reading them."""
    path = dataset_file(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return path, list(data.files)
    except UNREADABLE as exc:
        raise _corrupt(path, exc) from exc


def _corrupt(path: Path, exc: Exception) -> DatasetError:
    return DatasetError(
        f"{path} is corrupt or not an imitation dataset from `python -m ace_core mine` ({exc})"
    )


def _refuse_foreign(path: Path, fingerprint: str, space: ActionSpace) -> None:
    if fingerprint != space.fingerprint():
        raise DatasetError(
            f"dataset {path} was mined on {fingerprint!r}, but this env's action space is "
            f"{space.fingerprint()!r}: use a dataset mined on the same env"
        )


def _read(path, space: ActionSpace, keys: tuple[str, ...]) -> tuple[Path, dict]:
    """(the dataset file at ``path``, the arrays named ``keys``), refusing a missing, unreadable,
    incomplete or foreign dataset; ``keys=()`` reads every array."""
    path = dataset_file(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in (*DATASET_KEYS, "fingerprint", "load_scale") if k not in data.files]
            if missing:
                raise KeyError(", ".join(missing))
            arrays = {k: data[k] for k in (keys or data.files)}
    except UNREADABLE as exc:
        raise _corrupt(path, exc) from exc
    _refuse_foreign(path, str(arrays.get("fingerprint", "")), space)
    return path, arrays


def check_dataset(path, space: ActionSpace) -> Path:
    """The dataset file at ``path``, refused as :func:`load_dataset` would refuse a missing,
    unreadable or foreign one, without reading its arrays (a run checks its mine before it starts)."""
    return _read(path, space, ("fingerprint",))[0]


def load_dataset(path, space: ActionSpace) -> Dataset:
    """The dataset at ``path`` (a ``dataset.npz`` or the mine directory holding it)."""
    path, arrays = _read(path, space, ())
    if len(arrays["action"]) == 0:
        raise DatasetError(f"dataset {path} holds no expert decision; mine more episodes")
    return Dataset(arrays, space.n)


def concat_datasets(datasets: list[tuple[str, Dataset]]) -> Dataset:
    """One dataset from several (DAgger's aggregation): decisions concatenated, days matched by
    scenario name (a day of one mine is the same day in another, so holding it out holds it out
    everywhere), ``source`` the index of each decision's dataset. Datasets must share the feature
    scale: their features are the inputs of one policy."""
    if len(datasets) == 1:
        return datasets[0][1]
    first_path, first = datasets[0]
    for path, dataset in datasets:
        if "day_name" not in dataset.arrays:
            raise DatasetError(
                f"dataset {path} does not name its days (mined before day names); delete its "
                "dataset.npz and summary.json and run the same mine again to rejoin its episodes"
            )
        if not same_features(dataset.feature_state, first.feature_state):
            raise DatasetError(
                f"dataset {path} has another feature scale or layout than {first_path}: its "
                "features are not the same policy inputs; mine it with a player cloned from the "
                "first dataset (`mine --player`), or clone on datasets mined alike"
            )
    names = list(dict.fromkeys(str(n) for _, d in datasets for n in d.arrays["day_name"]))
    offsets, shift, n_episodes, episodes, days = [np.zeros(1, np.int64)], 0, 0, [], []
    for _, dataset in datasets:
        arrays = dataset.arrays
        offsets.append(arrays["cand_offsets"][1:] + shift)
        shift += int(arrays["cand_offsets"][-1])
        episodes.append(arrays["episode"] + n_episodes)
        n_episodes += int(np.max(arrays["episode"], initial=-1)) + 1
        days.append(np.asarray([names.index(str(n)) for n in arrays["day_name"]], np.int64)[arrays["day"]])
    arrays = {
        k: np.concatenate([d.arrays[k] for _, d in datasets])
        for k in ("features", "legal", "action", "step", "cand_index", "cand_max_rho")
    }
    return Dataset(
        {
            **arrays,
            "cand_offsets": np.concatenate(offsets),
            "episode": np.concatenate(episodes),
            "day": np.concatenate(days),
            "day_name": np.asarray(names, dtype=str),
            "source": np.concatenate([np.full(len(d), i) for i, (_, d) in enumerate(datasets)]),
            "move": np.concatenate([move_texts(d.arrays) for _, d in datasets]),
            "fingerprint": first.arrays["fingerprint"],
            "load_scale": first.load_scale,
            "overflow": np.asarray(first.overflow),
        },
        first.n_actions,
    )
