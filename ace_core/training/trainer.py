"""The training loop: SAC on the grid's train scenarios, reporting through an event sink.

The agent decides only when the grid needs it (max rho >= ``rho_threshold``, SMAAC's rule);
otherwise the loop reconnects a line whose cooldown is over or does nothing. One stored
transition spans a decision and every step up to the next decision or the episode's end: its
reward is the discounted sum of the per-step rewards over those steps and its discount is
``gamma ** steps`` (see :mod:`ace_core.rl.buffer`). A game over is terminal; the end of a
scenario is a time limit, bootstrapped from its last observation.

Extensions (:mod:`ace_core.extension`) hook into the loop; the trainer is handed them, built from
the config by :func:`~ace_core.training.extensions.extensions_for`, and never names one: the expert
teacher (:mod:`ace_core.training.teacher`, ``teacher_prob`` > 0) may take decisions in the policy's
place, and with ``llm`` other than ``none``, :class:`~ace_core.llm.coevolution.CoEvolution` adds
ACE: the LLM actor refines low-reward decisions, the critic reshapes finished trajectories, SAC
samples from the mixed buffer, and LoRA rounds fine-tune the LLM. Each extension's state is part
of the checkpoint.

A run stops at ``steps`` environment steps or, with ``decisions`` > 0, at that many agent
decisions, whichever comes first. With ``validate_every`` > 0 the plain policy plays the validation
days every that many decisions (:mod:`ace_core.training.validation`) and the best one is kept as ``best.pt``;
with ``pretrain_mine`` the policy starts from behaviour cloning of the expert
(:mod:`ace_core.imitation.pretrain`).

Episodes walk the train scenarios in an order fixed by the seed; each episode's grid seed comes
from ``(seed, episode number)``. A checkpoint stores the actions of the episode under way, and
resume replays them on the same scenario and seed, so a resumed run is identical to an
uninterrupted one (:mod:`ace_core.training.resume`). What the loop works on is built by
:mod:`ace_core.training.setup`; :func:`ace_core.training.run` is the one way to run a run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ace_core.agents.sac import calm_release
from ace_core.checkpoint import BEST_NAME, CHECKPOINT_NAME, load_checkpoint, validated_file, write_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import CheckpointError
from ace_core.events import CheckpointEvent, EpisodeEvent, EventSink, MetricsEvent, NullSink
from ace_core.extension import TrainerExtension
from ace_core.grid.candidates import real_action, reconnect_or_nothing
from ace_core.grid.scenarios import reset_to
from ace_core.rl.buffer import Transition
from ace_core.rl.exploration import random_legal_action
from ace_core.rl.rng_state import preserved_rng
from ace_core.training.best_choice import BestChoice
from ace_core.training.extensions import ExtensionFactory, extensions_for
from ace_core.training.pending import Pending
from ace_core.training.resume import restore, training_state, truncate_logs
from ace_core.training.setup import RunParts, anchor_for, build_parts, start_from, start_state, write_run_days
from ace_core.training.validation import Validation
from ace_core.workers import HERE, Workers


@dataclass
class TrainResult:
    steps: int
    episodes: int
    decisions: int
    updates: int
    seconds: float
    checkpoint: Path
    stopped: bool
    """True when the sink asked to stop before the budget (steps or decisions)"""
    best_validation_survival: float | None = None
    """the best validation survival (None: the run does not validate)"""
    best_step: int | None = None
    best_decisions: int | None = None
    best_checkpoint: Path | None = None
    """``best.pt``, the policy of the best validation"""

    def as_dict(self) -> dict:
        """Plain JSON values (paths as strings): what ``summary.json`` holds."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(self).items()}


class Trainer:
    """The loop of one run in ``out_dir``; ``extensions`` builds its extensions from the config and
    the run's parts (:mod:`ace_core.training.extensions`); ``workers``: where its own mines
    (``pretrain_mine=auto``) and validations play (Ray actors here or on a cluster); the run is the
    same whatever their number and place."""

    def __init__(
        self,
        config: TrainConfig,
        out_dir: Path,
        sink: EventSink | None = None,
        extensions: ExtensionFactory = extensions_for,
        workers: Workers = HERE,
    ) -> None:
        self.config = config.validate()
        self.out_dir = Path(out_dir)
        self.sink = sink or NullSink()
        self._make_extensions, self.workers = extensions, workers
        self._assemble(build_parts(self.config, self.out_dir, self.workers))
        self.step = 0
        self.episode = 0
        self.decisions = 0
        self.episode_actions: list[int] = []
        self.episode_return = 0.0
        self.pending: Pending | None = None
        self.validated_at: int | None = None
        """the decision count of the last validation"""
        self.best: Validation | None = None
        self.choice = BestChoice(config.validation.decides, config.validation.floor)
        self.obs = None
        self._window: dict[str, list[float]] = {}
        self._scenario_order = np.random.default_rng([config.seed, 1]).permutation(len(self.scenarios))

    def _assemble(self, parts: RunParts) -> None:
        """Take the run's pieces and build its extensions over them."""
        self.env, self.space, self.features = parts.env, parts.space, parts.features
        self.sac, self.buffer, self.rng = parts.sac, parts.buffer, parts.rng
        self.scenarios, self.validator = parts.scenarios, parts.validator
        self.imitation, self.anchor, self.taught = parts.imitation, parts.anchor, parts.taught
        self.extensions: list[TrainerExtension] = list(self._make_extensions(self.config, parts))
        self.replay = self.buffer  # what SAC samples from: the RL buffer, or what an extension wraps
        for extension in self.extensions:
            self.replay = extension.replay(self.replay)
            extension.use_sink(self.sink)

    def extension(self, name: str) -> TrainerExtension | None:
        """The run's extension called ``name`` (``teacher``, ``ace``), None if it has none."""
        return next((extension for extension in self.extensions if extension.name == name), None)

    @property
    def sink(self) -> EventSink:
        return self._sink

    @sink.setter
    def sink(self, sink: EventSink) -> None:
        # run() plugs its sink in once everything is built; extensions report to it too
        self._sink = sink
        for extension in getattr(self, "extensions", ()):
            extension.use_sink(sink)

    # ----- episodes -----
    def _scenario(self, episode: int):
        return self.scenarios[self._scenario_order[episode % len(self.scenarios)]]

    def _episode_seed(self, episode: int) -> int:
        return int(np.random.default_rng([self.config.seed, 2, episode]).integers(2**31 - 1))

    def _start_episode(self) -> None:
        self.obs = reset_to(self.env, self._scenario(self.episode), self._episode_seed(self.episode))
        self.episode_actions = []
        self.episode_return = 0.0

    # ----- the loop -----
    def run(self, resume: bool = False) -> TrainResult:
        self._begin(resume)
        started, start_step = time.perf_counter(), self.step
        stopped = False
        bar = tqdm(total=self.config.steps, initial=self.step, unit="step", disable=None, leave=False)
        self._validate_if_due()  # the starting policy, at decision 0
        while self.step < self.config.steps and not self._decisions_spent():
            if self.sink.should_stop():
                stopped = True
                break
            self._one_step()
            for extension in self.extensions:
                extension.after_step(self.step)
            bar.update(1)
            self._validate_if_due()
            if self.step % self.config.log_every == 0:
                self._report(started, start_step)
            if self.step % self.config.checkpoint_every == 0:
                self._checkpoint()
        bar.close()
        if self.validator and not stopped and self.validated_at != self.decisions:
            self._validate()  # the policy the run ends with
        checkpoint = self._checkpoint()
        best = self.best
        return TrainResult(
            steps=self.step,
            episodes=self.episode,
            decisions=self.decisions,
            updates=self.sac.updates,
            seconds=time.perf_counter() - started,
            checkpoint=checkpoint,
            stopped=stopped,
            best_validation_survival=best.survival if best else None,
            best_step=best.step if best else None,
            best_decisions=best.decisions if best else None,
            best_checkpoint=self.out_dir / BEST_NAME if best else None,
        )

    def _begin(self, resume: bool) -> None:
        """Resume from the run's checkpoint, or start afresh (cloning the expert first when the
        run has an imitation start not cloned yet); then name the days the policy learns from."""
        path = self.out_dir / CHECKPOINT_NAME
        if resume:
            restore(self, load_checkpoint(path))
            truncate_logs(self.out_dir, after_step=self.step)
        elif path.exists():
            raise CheckpointError(
                f"{self.out_dir} already holds a run; pass resume=True (--resume) or another dir"
            )
        else:
            if self.imitation and not self.imitation.done():
                self._clone_first()
            self._start_episode()
        write_run_days(self.out_dir, self.config, self.scenarios, self.imitation)

    def _clone_first(self) -> None:
        """Mine (or reuse the mine) and clone the expert; the policy starts from the clone. A clone
        that also plays continuous moves (``pretrain_moves``) acts in a larger space than the one
        the run was built on: the run is then built again, as a run restarted after its clone is."""
        state, space = start_state(self.imitation.run(self.sink, len(self.scenarios)), self.space)
        if space is not self.space:
            self.env.close()
            self._assemble(build_parts(self.config, self.out_dir, self.workers))
            return
        self.features.load_state_dict(state["features"])
        start_from(self.sac, state, str(self.imitation.checkpoint))
        # the clone's feature scale is known only now
        self.anchor = anchor_for(self.config, self.env, self.space, self.features, self.imitation)

    def _decisions_spent(self) -> bool:
        return 0 < self.config.decisions <= self.decisions

    # ----- validation -----
    def _validate_if_due(self) -> None:
        every = self.config.validation.every
        if every and self.decisions % every == 0 and self.validated_at != self.decisions:
            self._validate()

    def _validate(self) -> None:
        """Play the validation days with the policy as it stands; keep it as best.pt if the run's
        choice (validation_decides, validation_floor) prefers it to the best so far (ties keep the
        earlier), and with validation_keep in validated/ whatever the choice."""
        with preserved_rng():
            result = self.validator(self.sac, self.features, self.step, self.decisions)
        self.validated_at = self.decisions
        self.sink.emit(MetricsEvent(step=self.step, values=result.metrics()))
        # policy files (no buffer, no loop): what evaluation and deployment load
        policy = {
            "config": self.config.full_dict(),
            "space": self.space,
            "features": self.features,
            "sac": self.sac,
            "validation": result.as_dict(),
        }
        if self.config.validation.keep:
            write_checkpoint(validated_file(self.out_dir, self.decisions), **policy)
        if self.choice.prefers(result.metrics(), self.best.metrics() if self.best else None):
            self.best = result
            write_checkpoint(self.out_dir / BEST_NAME, **policy)

    def _one_step(self) -> None:
        config, obs = self.config, self.obs
        if obs.rho.max() >= config.rho_threshold:
            action = self._decide(obs)
        else:
            action = reconnect_or_nothing(obs)
        self.obs, reward, done, info = self.env.step(self.grid_action(obs, action))
        self.episode_actions.append(action)
        self.episode_return += reward
        self.step += 1
        if self.pending is not None:
            first = self.pending.step_reward is None
            self.pending.add(float(reward), config.sac.gamma)
            if first:
                for extension in self.extensions:
                    extension.note_step_reward(float(reward))
        if done:
            self._end_episode(info)

    def grid_action(self, obs, action: int):
        """The grid2op action the loop plays for ``action`` at ``obs``; on a calm step (max rho
        under ``rho_threshold``) with a policy that plays continuous moves, the moves in force
        are released as the deployed agent releases them (:func:`~ace_core.agents.sac.calm_release`)."""
        played = self.space.to_grid2op(action, self.env.action_space)
        calm = obs.rho.max() < self.config.rho_threshold
        move = calm_release(obs, self.space) if calm else None
        return played if move is None else played + move.to_grid2op(self.env.action_space)

    def _decide(self, obs) -> int:
        features, mask = self.features(obs), self.space.top_mask(obs)
        self._close_pending(features, mask, done=False)
        action = self._extension_choice(obs, features, mask)
        if action is None and len(self.buffer) < self.config.learning_starts:
            action = random_legal_action(self.space, self.rng, mask)
        elif action is None:
            action = self.sac.act(features, mask, self.rng)
        # a topology equal to the current one is no decision: it is stored and played as do-nothing
        action = real_action(obs, self.space, action)
        self.pending = Pending(
            features, mask, action, episode_step=len(self.episode_actions), max_rho=float(obs.rho.max())
        )
        for extension in self.extensions:
            extension.note_decision(self.step, self.episode, obs, features, mask, action)
        self.decisions += 1
        if len(self.buffer) >= self.config.learning_starts and self.decisions % self.config.update_every == 0:
            self._update()
        return action

    def _update(self) -> None:
        """``gradient_steps`` SAC updates on batches from the replay (and the anchor's decisions)."""
        for _ in range(self.config.gradient_steps):
            batch = self.replay.sample(self.config.batch_size, self.rng)
            anchor = (
                self.anchor.sample(self.config.batch_size, self.rng, self.taught) if self.anchor else None
            )
            for key, value in self.sac.update(batch, anchor).items():
                self._window.setdefault(key, []).append(value)

    def _extension_choice(self, obs, features: np.ndarray, mask: np.ndarray) -> int | None:
        for extension in self.extensions:
            action = extension.choose(self.step, obs, features, mask)
            if action is not None:
                return action
        return None

    def _close_pending(self, next_features, next_mask, done: bool) -> None:
        if self.pending is None:
            return
        p = self.pending
        step_reward = p.step_reward if p.step_reward is not None else 0.0
        row = self.buffer.add(
            Transition(
                p.obs, p.mask, p.action, p.reward, next_features, next_mask, done, p.discount, step_reward
            )
        )
        for extension in self.extensions:
            extension.note_stored(row, p.episode_step, p.max_rho, p.action, step_reward)
        self.pending = None

    def _end_episode(self, info) -> None:
        scenario = self._scenario(self.episode)
        survived = len(self.episode_actions)
        game_over = survived < scenario.length
        if game_over:
            self._close_pending(
                np.zeros(self.features.size, np.float32), np.ones(self.space.n_top, bool), True
            )
        else:
            self._close_pending(self.features(self.obs), self.space.top_mask(self.obs), False)
        self.sink.emit(
            EpisodeEvent(
                step=self.step,
                index=self.episode,
                scenario=scenario.name,
                steps_survived=survived,
                max_steps=scenario.length,
                reward=float(self.episode_return),
            )
        )
        self._window.setdefault("charts/episodic_return", []).append(float(self.episode_return))
        self._window.setdefault("charts/episodic_length", []).append(float(survived))
        self._window.setdefault("charts/survival", []).append(survived / scenario.length)
        for extension in self.extensions:
            extension.end_episode(self.episode, survived, scenario.length)
        self.episode += 1
        self._start_episode()

    def _report(self, started: float, start_step: int) -> None:
        values = {key: float(np.mean(v)) for key, v in self._window.items() if v}
        elapsed = max(time.perf_counter() - started, 1e-9)
        values.update(
            {
                "charts/SPS": (self.step - start_step) / elapsed,
                "charts/episodes": float(self.episode),
                "charts/decisions": float(self.decisions),
                "charts/updates": float(self.sac.updates),
                "charts/buffer_size": float(len(self.buffer)),
            }
        )
        for extension in self.extensions:
            values.update(extension.metrics())
        self._window = {}
        self.sink.emit(MetricsEvent(step=self.step, values=values))

    # ----- checkpoints -----
    def _checkpoint(self) -> Path:
        path = write_checkpoint(
            self.out_dir / CHECKPOINT_NAME,
            config=self.config.full_dict(),
            space=self.space,
            features=self.features,
            sac=self.sac,
            **training_state(self),
        )
        self.sink.emit(CheckpointEvent(step=self.step, path=str(path)))
        return path
