"""The imitation start: a run's policy cloned from the expert's mined decisions before RL.

With ``pretrain_mine`` set, a fresh run first gets a mine: the directory given, or with ``auto``
the mine of its env's train days (expert ``pretrain_expert``, grid seeds
``0..pretrain_seeds-1``, under the line attacks of ``pretrain_opponent``, else the run's own) in
the shared cache (:meth:`~ace_core.imitation.mining.MineSpec.default_dir`, so
every run asking for the same mine reuses it; mined here with Ray on ``workers`` processes, one
unless the caller gives more: the mine is the same whatever their number), and one more
mine of the same days at each of ``pretrain_demand_scales`` (:mod:`ace_core.grid.demand`) and
under the line attacks of ``pretrain_attacks`` (:mod:`ace_core.grid.opponents`; grid seeds
``0..pretrain_attack_seeds-1``, else those of the other mines). It then
clones the expert from every mine into ``<run>/pretrain/`` (:func:`ace_core.imitation.cloning.pretrain`, ``pretrain_epochs``
epochs, the run's hidden size and seed), and the trainer starts from that policy as it starts
from ``init_from``: its networks and feature scale.

With ``pretrain_moves`` N (mines of an expert with ``flex``) the clone also plays the N most
frequent discrete forms of the expert's continuous moves (``pretrain --moves``,
:mod:`ace_core.grid.flex.discrete`): its action space is the grid's with those moves, known only
once cloned, so the trainer builds the run again over it, as a run restarted after its clone.

A resumed run finds ``pretrain/checkpoint.pt`` and neither mines nor clones again. A given mine
made on another grid, or a corrupt one, is refused (:class:`~ace_core.imitation.data.DatasetError`)
when the trainer is built, before any file is written.

Progress reaches the sink as metrics at step 0, the share done of each phase:
``pretrain/mining`` (episodes of the mine on disk) and ``pretrain/cloning`` (0 when it starts, 1
when done, with ``pretrain/agreement_after``, the held-out agreement with the expert).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ace_core.checkpoint import CHECKPOINT_NAME
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import EventSink, MetricsEvent
from ace_core.grid.action_space import ActionSpace
from ace_core.imitation.data import check_dataset, load_dataset
from ace_core.rl.rng_state import preserved_rng
from ace_core.workers import HERE, Workers

PRETRAIN_DIR = "pretrain"


class ImitationStart:
    def __init__(self, config: TrainConfig, out_dir: Path, workers: Workers = HERE) -> None:
        self.config = config
        self.workers = workers
        self.dir = Path(out_dir) / PRETRAIN_DIR
        self.checkpoint = self.dir / CHECKPOINT_NAME

    def done(self) -> bool:
        """Whether the cloned policy is on disk (a resumed or restarted run)."""
        return self.checkpoint.is_file()

    def check(self, space: ActionSpace) -> None:
        """Refuse a given mine from another grid or a corrupt one, or with ``pretrain_moves`` one
        where the expert played no continuous move (an auto mine is the run's own)."""
        pretrain = self.config.pretrain
        if pretrain.mine == "auto":
            return
        check_dataset(pretrain.mine, space)
        if pretrain.moves and not load_dataset(pretrain.mine, space).played_moves(
            space, pretrain.move_labels
        ):
            raise ConfigError(
                f"pretrain_moves={pretrain.moves}: mine {pretrain.mine} holds no continuous move "
                f"(labels {pretrain.move_labels!r}); mine with an expert that plays them (e.g. "
                "greedy:threshold=0.8,flex=4), or set pretrain_moves=0"
            )

    def run(self, sink: EventSink, days: int) -> Path:
        """Mine (or reuse the mine), clone it, and return the cloned policy's checkpoint.
        ``days``: the train days of the run, to report the mining's progress."""
        from ace_core.imitation.cloning import CloneConfig, pretrain

        mine_dirs = self._mine(sink, days)
        sink.emit(MetricsEvent(step=0, values={"pretrain/cloning": 0.0}))
        clone = CloneConfig(epochs=self.config.pretrain.epochs, seed=self.config.seed)
        with preserved_rng():  # cloning seeds torch: the run's own streams go on untouched
            report = pretrain(
                self.config.env,
                mine_dirs,
                self.dir,
                clone,
                hidden=self.config.sac.hidden,
                moves=self.config.pretrain.moves,
                move_labels=self.config.pretrain.move_labels,
            )
        values = {
            "pretrain/cloning": 1.0,
            "pretrain/agreement_before": report["agreement_before"],
            "pretrain/agreement_after": report["agreement_after"],
            "pretrain/loss_last_epoch": report["loss_last_epoch"],
        }
        sink.emit(MetricsEvent(step=0, values=values))
        return self.checkpoint

    def _specs(self) -> list:
        """The auto mines: the train days as they are and at each heavier demand scale (under
        ``pretrain_opponent``, else the run's own), then under ``pretrain_attacks``."""
        from ace_core.imitation.mining import MineSpec

        pretrain = self.config.pretrain
        settings = {
            "env": self.config.env,
            "expert": pretrain.expert,
            "seeds": pretrain.seeds,
            "episode_length": self.config.episode_length,
        }
        specs = [
            MineSpec(**settings, opponent=pretrain.mines_opponent(self.config.opponent), demand_scale=scale)
            for scale in pretrain.scales()
        ]
        if pretrain.attacks:
            specs.append(
                MineSpec(**{**settings, "seeds": pretrain.attacks_mine_seeds()}, opponent=pretrain.attacks)
            )
        return specs

    def mine_dirs(self) -> list[Path]:
        """The mines the policy is cloned from: the one given, or the shared cache's (auto)."""
        if self.config.pretrain.mine != "auto":
            return [Path(self.config.pretrain.mine)]
        return [spec.default_dir().resolve() for spec in self._specs()]

    def _mine(self, sink: EventSink, days: int) -> list[Path]:
        """Mine what is not mined yet; ``days``: the run's train days (each mine plays each of
        them once per grid seed, and progress counts the episodes of every mine)."""
        if self.config.pretrain.mine != "auto":
            return self.mine_dirs()
        from ace_core.imitation.mining import mine

        outs = self.mine_dirs()
        total = max(days * sum(spec.seeds for spec in self._specs()), 1)

        def progress(text: str) -> None:
            print(text, file=sys.stderr, flush=True)
            done = sum(
                len(list((out / "episodes").glob("*.npz"))) for out in outs if (out / "episodes").is_dir()
            )
            sink.emit(MetricsEvent(step=0, values={"pretrain/mining": min(done / total, 1.0)}))

        sink.emit(MetricsEvent(step=0, values={"pretrain/mining": 0.0}))
        decisions = 0
        for spec, out in zip(self._specs(), outs):
            with preserved_rng():
                decisions += mine(spec, out, self.workers, progress)["decisions"]
        sink.emit(
            MetricsEvent(
                step=0, values={"pretrain/mining": 1.0, "pretrain/mined_decisions": float(decisions)}
            )
        )
        return outs
