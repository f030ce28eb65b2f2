"""The training loop: SAC on the grid's train scenarios, reporting through an event sink.

The agent decides only when the grid needs it (max rho >= ``rho_threshold``, SMAAC's rule);
otherwise the loop reconnects a line whose cooldown is over or does nothing. One stored
transition spans a decision and every step up to the next decision or the episode's end: its
reward is the discounted sum of the per-step rewards over those steps and its discount is
``gamma ** steps`` (see :mod:`ace_core.rl.buffer`). A game over is terminal; the end of a
scenario is a time limit, bootstrapped from its last observation.

Extensions (:mod:`ace_core.extension`) hook into the loop without the trainer knowing them by
name: the expert teacher (:mod:`ace_core.training.teacher`, ``teacher_prob`` > 0) may take decisions in the
policy's place, and with ``llm`` other than ``none``, :class:`~ace_core.llm.coevolution.CoEvolution`
adds ACE: the LLM actor refines low-reward decisions, the critic reshapes finished trajectories,
SAC samples from the mixed buffer, and LoRA rounds fine-tune the LLM. Each extension's state is
part of the checkpoint.

A run stops at ``steps`` environment steps or, with ``decisions`` > 0, at that many agent
decisions, whichever comes first. With ``validate_every`` > 0 the plain policy plays the validation
days every that many decisions (:mod:`ace_core.training.validation`) and the best one is kept as ``best.pt``;
with ``pretrain_mine`` the policy starts from behaviour cloning of the expert
(:mod:`ace_core.imitation.pretrain`).

Episodes walk the train scenarios in an order fixed by the seed; each episode's grid seed comes
from ``(seed, episode number)``. A checkpoint stores the actions of the episode under way, and
resume replays them on the same scenario and seed, so a resumed run is identical to an
uninterrupted one.

"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from ace_core.checkpoint import (
    BEST_NAME,
    CHECKPOINT_NAME,
    check_same_space,
    load_checkpoint,
    write_checkpoint,
)
from ace_core.config import TrainConfig
from ace_core.errors import CheckpointError, ConfigError
from ace_core.events import CheckpointEvent, EpisodeEvent, EventSink, MetricsEvent, NullSink, TeeSink
from ace_core.extension import TrainerExtension
from ace_core.grid.action_space import build_action_space
from ace_core.grid.candidates import real_action, reconnect_or_nothing
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import reset_to, scenarios
from ace_core.imitation.anchor import ExpertAnchor
from ace_core.imitation.pretrain import ImitationStart
from ace_core.rl.buffer import ReplayBuffer, Transition
from ace_core.rl.rng_state import preserved_rng
from ace_core.rl.sac import SAC
from ace_core.training.teacher import ExpertTeacher
from ace_core.training.tensorboard import TensorBoardSink
from ace_core.training.validation import Validation, Validator


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


@dataclass
class Pending:
    """A decision whose transition is still accumulating reward."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    reward: float = 0.0
    discount: float = 1.0
    step_reward: float | None = None
    episode_step: int = 0
    """step within the episode at which the decision was taken"""
    max_rho: float = 0.0
    """max rho when the decision was taken"""

    def add(self, reward: float, gamma: float) -> None:
        if self.step_reward is None:
            self.step_reward = reward
        self.reward += self.discount * reward
        self.discount *= gamma


class Trainer:
    def __init__(self, config: TrainConfig, out_dir: Path, sink: EventSink | None = None) -> None:
        self.config = config.validate()
        self.out_dir = Path(out_dir)
        self.sink = sink or NullSink()
        torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.env = make_env(config.env, opponent=config.opponent)
        self.space = build_action_space(self.env)
        if config.action_subset:
            self.space = self.space.restrict_to_file(config.action_subset)
        start, where = self._start_state(config.init_from), config.init_from
        self.imitation = ImitationStart(config, self.out_dir) if config.pretrain_mine else None
        if self.imitation and self.imitation.done():  # cloned by an earlier attempt of this run
            start, where = self._start_state(self.imitation.checkpoint), str(self.imitation.checkpoint)
        elif self.imitation:
            self.imitation.check(self.space)
        self.features = FeatureBuilder.for_policy(self.env, start) if start else FeatureBuilder(self.env)
        self.scenarios = scenarios(self.env, "train", config.episode_length)
        if not self.scenarios:
            raise ConfigError(f"env {config.env!r} has no train scenarios; pick an env with more chronics")
        self.validator = self._validator()
        cloning_first = self.imitation is not None and not self.imitation.done()
        self.anchor = None if cloning_first else self._anchor()
        self.sac = SAC(self.features.size, self.space, config.sac)
        if start:
            self._start_from(start, where)
        self.buffer = ReplayBuffer(config.buffer_size, self.features.size, self.space.n_top)
        self.teacher = ExpertTeacher(
            config, self.space, self.env.action_space, self.sac, self.rng, self.features.size
        )
        self.ace = self._coevolution()
        self.extensions: list[TrainerExtension] = [self.teacher, *([self.ace] if self.ace else [])]
        self.replay = self.buffer  # what SAC samples from: the RL buffer, or what an extension wraps
        for extension in self.extensions:
            self.replay = extension.replay(self.replay)
            extension.use_sink(self.sink)
        self.step = 0
        self.episode = 0
        self.decisions = 0
        self.episode_actions: list[int] = []
        self.episode_return = 0.0
        self.pending: Pending | None = None
        self.validated_at: int | None = None
        """the decision count of the last validation"""
        self.best: Validation | None = None
        self.obs = None
        self._window: dict[str, list[float]] = {}
        self._scenario_order = np.random.default_rng([config.seed, 1]).permutation(len(self.scenarios))

    def _start_state(self, init_from: str | Path) -> dict | None:
        """The checkpoint a run starts its policy from (``init_from``, or the imitation start's),
        checked against this run's action space; None for a fresh policy. A resume then restores
        the run's own checkpoint."""
        if not init_from:
            return None
        state = load_checkpoint(Path(init_from))
        check_same_space(state, self.space.fingerprint(), str(init_from))
        return state

    def _start_from(self, state: dict, where: str) -> None:
        # the networks only: optimisers, temperature and update count start afresh for RL
        try:
            for name in ("actor", "qf1", "qf2", "qf1_target", "qf2_target"):
                getattr(self.sac, name).load_state_dict(state["sac"][name])
        except (KeyError, RuntimeError) as exc:
            raise CheckpointError(
                f"start policy {where!r}: its networks do not fit this run's "
                f"(same env, head and hidden size needed): {str(exc).splitlines()[0]}"
            ) from None

    def _anchor(self) -> ExpertAnchor | None:
        """The expert decisions of the anchor term (once the policy's feature scale is known)."""
        if self.config.sac.anchor == 0:
            return None
        mines = []
        for mine in self.config.anchor_mines():
            # auto: every mine the run was cloned from (heavier days included)
            mines += self.imitation.mine_dirs() if mine == "auto" and self.imitation else [mine]
        return ExpertAnchor.load(mines, self.space, self.features.state_dict())

    def _validator(self) -> Validator | None:
        if not self.config.validate_every:
            return None
        days = scenarios(self.env, "validation", self.config.episode_length)
        if not days:
            raise ConfigError(
                f"env {self.config.env!r} has no validation scenarios; set validate_every=0 or pick an env with more chronics"
            )
        return Validator(
            self.config.env,
            self.space,
            days,
            self.config.validation_seeds,
            self.config.rho_threshold,
            self.config.validation_demand_scale,
        )

    def _coevolution(self):
        """ACE's extension when the run has an LLM (imported only then: it loads transformers)."""
        if self.config.llm == "none":
            return None
        from ace_core.llm.coevolution import CoEvolution

        return CoEvolution(
            self.config, self.env, self.space, self.features, self.sac, self.buffer, self.sink, self.out_dir
        )

    @property
    def sink(self) -> EventSink:
        return self._sink

    @sink.setter
    def sink(self, sink: EventSink) -> None:
        # the CLI and the web app plug their sink in after construction; extensions report to it too
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
        path = self.out_dir / CHECKPOINT_NAME
        if resume:
            self._restore(load_checkpoint(path))
        elif path.exists():
            raise CheckpointError(
                f"{self.out_dir} already holds a run; pass resume=True (--resume) or another dir"
            )
        else:
            if self.imitation and not self.imitation.done():
                state = self._start_state(self.imitation.run(self.sink, len(self.scenarios)))
                self.features.load_state_dict(state["features"])
                self._start_from(state, str(self.imitation.checkpoint))
                self.anchor = self._anchor()  # the clone's feature scale is known only now
            self._start_episode()
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

    def _decisions_spent(self) -> bool:
        return 0 < self.config.decisions <= self.decisions

    # ----- validation -----
    def _validate_if_due(self) -> None:
        every = self.config.validate_every
        if every and self.decisions % every == 0 and self.validated_at != self.decisions:
            self._validate()

    def _validate(self) -> None:
        """Play the validation days with the policy as it stands; keep it as best.pt if it beats
        the best so far (ties keep the earlier)."""
        with preserved_rng():
            result = self.validator(self.sac, self.features, self.step, self.decisions)
        self.validated_at = self.decisions
        values = {
            "eval/validation_survival": result.survival,
            "eval/validation_reward": result.reward,
            "eval/validation_decisions": float(result.decisions),
        }
        for scale, survival in result.survival_by_demand.items():
            values[f"eval/validation_survival_demand_{scale}"] = survival
        self.sink.emit(MetricsEvent(step=self.step, values=values))
        if self.best is None or result.survival > self.best.survival:
            self.best = result
            # a policy file (no buffer, no loop): what evaluation and deployment load
            write_checkpoint(
                self.out_dir / BEST_NAME,
                config=self.config.full_dict(),
                space=self.space,
                features=self.features,
                sac=self.sac,
                validation=result.as_dict(),
            )

    def _one_step(self) -> None:
        config, obs = self.config, self.obs
        if obs.rho.max() >= config.rho_threshold:
            action = self._decide(obs)
        else:
            action = reconnect_or_nothing(obs)
        self.obs, reward, done, info = self.env.step(self.space.to_grid2op(action, self.env.action_space))
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

    def _decide(self, obs) -> int:
        features, mask = self.features(obs), self.space.top_mask(obs)
        self._close_pending(features, mask, done=False)
        action = self._extension_choice(obs, features, mask)
        if action is None and len(self.buffer) < self.config.learning_starts:
            action = self._random_legal_action(mask)
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
            for _ in range(self.config.gradient_steps):
                batch = self.replay.sample(self.config.batch_size, self.rng)
                anchor = (
                    self.anchor.sample(self.config.batch_size, self.rng, self.teacher.taught)
                    if self.anchor
                    else None
                )
                for key, value in self.sac.update(batch, anchor).items():
                    self._window.setdefault(key, []).append(value)
        return action

    def _extension_choice(self, obs, features: np.ndarray, mask: np.ndarray) -> int | None:
        for extension in self.extensions:
            action = extension.choose(self.step, obs, features, mask)
            if action is not None:
                return action
        return None

    def _random_legal_action(self, top_mask: np.ndarray) -> int:
        """Uniform over legal top-level choices, then uniform among that substation's topologies
        (uniform over all 66,810 would nearly always pick the one 17-element substation)."""
        top = int(self.rng.choice(np.flatnonzero(top_mask)))
        sub = self.space.top_sub[top]
        if sub < 0:
            return top
        rows = np.flatnonzero(self.space.topo_sub == sub)
        return self.space.first_topology + int(self.rng.choice(rows))

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
        training = {
            "buffer": self.buffer.state_dict(),
            "loop": {
                "step": self.step,
                "episode": self.episode,
                "decisions": self.decisions,
                "episode_actions": list(self.episode_actions),
                "pending": None if self.pending is None else vars(self.pending).copy(),
                "window": {k: list(v) for k, v in self._window.items()},
                "validated_at": self.validated_at,
                "best": self.best.as_dict() if self.best else None,
            },
            "rng": {
                "numpy": self.rng.bit_generator.state,
                "torch": torch.get_rng_state(),
                "python": random.getstate(),
            },
            **{extension.name: extension.state_dict() for extension in self.extensions},
        }
        path = write_checkpoint(
            self.out_dir / CHECKPOINT_NAME,
            config=self.config.full_dict(),
            space=self.space,
            features=self.features,
            sac=self.sac,
            **training,
        )
        self.sink.emit(CheckpointEvent(step=self.step, path=str(path)))
        return path

    def _restore(self, state: dict) -> None:
        check_same_space(state, self.space.fingerprint(), str(self.out_dir))
        # the only settings a resume may change are how far to go; settings added since the
        # checkpoint was written are not in it, and keep this config's values
        changed = [
            name for name in self.config.differences(state["config"]) if name not in ("steps", "decisions")
        ]
        if changed:
            raise CheckpointError(f"resume must use the run's settings; these differ: {', '.join(changed)}")
        saved = state.get("features", {})
        if bool(saved.get("overflow", False)) != self.features.overflow:
            raise CheckpointError(
                f"{self.out_dir} was trained on the policy inputs of an older GridACE (no overflow "
                "counters) and cannot be resumed; start a new run from it with --init-from"
            )
        self.sac.load_state_dict(state["sac"])
        self.buffer.load_state_dict(state["buffer"])
        loop = state["loop"]
        self.step, self.episode, self.decisions = loop["step"], loop["episode"], loop["decisions"]
        # before extensions, the teacher's count was a loop counter (absent before expert guidance)
        state.setdefault(self.teacher.name, {"decisions": loop.get("teacher_decisions", 0)})
        self._window = {k: list(v) for k, v in loop["window"].items()}
        self.validated_at = loop.get("validated_at")  # absent before validation
        self.best = Validation(**loop["best"]) if loop.get("best") else None
        self.pending = Pending(**loop["pending"]) if loop["pending"] else None
        self.rng.bit_generator.state = state["rng"]["numpy"]
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        # rebuild the grid state by replaying the episode under way
        self._start_episode()
        actions = loop["episode_actions"]
        for action in actions:
            self.obs, reward, done, _ = self.env.step(self.space.to_grid2op(action, self.env.action_space))
            self.episode_return += reward
            if done:
                raise CheckpointError("replaying the checkpoint's episode ended early: the env changed")
        self.episode_actions = list(actions)
        # after the replay: extensions may re-attach observations to the env
        for extension in self.extensions:
            extension.load_state_dict(state[extension.name])


def write_summary(out_dir: Path, result: TrainResult) -> dict:
    """``summary.json``: written last, so its presence marks a run that finished."""
    summary = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(result).items()}
    (Path(out_dir) / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def train(
    config: TrainConfig, sink: EventSink | None = None, out_dir: Path = Path("runs/run"), resume: bool = False
) -> TrainResult:
    """Train (or resume) a run in ``out_dir``, with TensorBoard files beside its logs; see
    :class:`Trainer`."""
    tensorboard = TensorBoardSink(out_dir)
    try:
        result = Trainer(config, out_dir, TeeSink(sink or NullSink(), tensorboard)).run(resume=resume)
    finally:
        tensorboard.close()
    write_summary(out_dir, result)
    return result
