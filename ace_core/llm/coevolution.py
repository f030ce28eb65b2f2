"""The ACE half of a training run: LLM actor and critic passes, approvals, mixed buffer, LoRA rounds.

The trainer owns the environment loop and calls the hooks of :mod:`ace_core.extension`; this
extension owns everything the LLM adds, and checkpoints it (under ``ace``) so that a resumed run is
identical to an uninterrupted one. SAC samples from its mixed buffer (``replay``).

- ``note_decision`` / ``note_step_reward``: a decision whose first step reward is below ``r_bar``
  joins the actor's window, with a copy of its observation (frozen to bytes in checkpoints);
- ``note_stored`` / ``end_episode``: each stored transition is traced in the episode's trajectory
  (its place in the replay buffer), for the critic;
- ``after_step``: every ``actor_every`` steps the actor refines decisions of the window (at most
  ``actor_batch``: the worst first, or a uniform pick, by ``actor_selection``), every
  ``critic_every`` steps the critic reshapes the most telling finished trajectory; both stop
  when ``llm_budget`` calls are spent;
- accepted refinements enter the mixed buffer and the fine-tuning set at once, or, with
  ``require_approval``, when the sink says ``is_approved(id) is True`` (False drops them);
- every ``finetune_every`` approved refinements, a LoRA round on the best samples (local backend),
  each labelled with the shortlist option simulation found best (see :mod:`ace_core.llm.actor`);
  a server backend gets the samples exported as JSONL instead, with a log line saying so.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ace_core.config import TrainConfig
from ace_core.events import EventSink, ShapingEvent
from ace_core.extension import TrainerExtension
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.snapshot import freeze_obs, thaw_obs
from ace_core.grid.text import action_text
from ace_core.llm.actor import Decision, PolicyActor, RandomChooser
from ace_core.llm.critic import TracedDecision, Trajectory, ValueCritic, select
from ace_core.llm.lora import Sample
from ace_core.llm.lora_round import lora_round
from ace_core.rl.buffer import SOURCE_LLM, ReplayBuffer, RowOverwrittenError, Transition
from ace_core.rl.mixed_buffer import MixedBuffer, priority
from ace_core.rl.sac import SAC

log = logging.getLogger(__name__)

APPROVAL_POLL_STEPS = 10
"""Steps between two polls of the sink for reviewers' decisions (a poll may cost a DB query)."""
WINDOW_LIMIT = 512
"""Low-reward decisions kept for the next actor pass at most (the oldest are dropped)."""
FINISHED_EPISODES_KEPT = 16
"""Finished trajectories the critic may still pick from."""
LLM_BUFFER_LIMIT = 20_000
"""Capacity of the LLM buffer (refinements are few: hundreds per run in the paper)."""
COUNTS = (
    "calls",
    "refinements",
    "accepted",
    "approved",
    "rejected",
    "shapings",
    "critic_calls",
    "critic_refused",
    "finetunes",
    "since_finetune",
)
"""What a run counts (reported as ``llm/<name>``, but ``since_finetune``)."""


@dataclass
class Awaiting:
    """An accepted refinement waiting for a reviewer (``require_approval``)."""

    refinement_id: str
    transition: Transition
    sample: Sample | None
    priority: float
    rl_reward: float
    """one-step simulated reward of the RL action the refinement replaces"""

    @classmethod
    def from_state(cls, state: dict) -> Awaiting:
        transition = state["transition"]
        if isinstance(transition, dict):  # checkpoints written before transitions were typed
            transition = dict(transition)
            rl_reward = transition.pop("rl_reward")
            transition = Transition(**transition, step_reward=transition["reward"], source=SOURCE_LLM)
            return cls(**{**state, "transition": transition, "rl_reward": rl_reward})
        return cls(**state)


def make_chooser(config: TrainConfig):
    """The LLM backend of ``config.llm`` (or the random chooser of the control)."""
    if config.llm == "random":
        return RandomChooser(config.seed)
    from ace_core.llm.factory import make_backend

    if config.llm == "local":
        return make_backend("local", config.llm_model, threads=config.torch_threads)
    return make_backend("openai", config.llm_model, timeout=config.llm_timeout)


class CoEvolution(TrainerExtension):
    name = "ace"

    def __init__(
        self,
        config: TrainConfig,
        env,
        space: ActionSpace,
        features: FeatureBuilder,
        sac: SAC,
        rl_buffer: ReplayBuffer,
        sink: EventSink,
        out_dir: Path,
        chooser=None,
    ) -> None:
        self.config = config
        self.env = env
        self.space = space
        self.features = features
        self.sink = sink
        self.out_dir = Path(out_dir)
        self.llm = chooser if chooser is not None else make_chooser(config)
        llm_buffer = ReplayBuffer(min(config.buffer_size, LLM_BUFFER_LIMIT), features.size, space.n_top)
        self.buffer = MixedBuffer(
            rl_buffer, llm_buffer, config.beta, config.priority_temperature, config.priority_max
        )
        self.actor = PolicyActor(
            self.llm,
            space,
            env.action_space,
            features,
            config.llm_actor,
            gamma=config.sac.gamma,
            policy_top_k=lambda f, m, k: [i for i, _ in sac.policy(f, m).top_k(k)],
        )
        self.critic = ValueCritic(
            self.llm,
            lambda index: action_text(space, index),
            # servers may not continue a prefilled reply; local models do
            replace(config.llm_critic, prefill=config.llm == "local"),
        )
        # --- state (all of it checkpointed) ---
        self.window: list[Decision] = []
        self.trajectory: list[TracedDecision] = []
        self.finished: list[Trajectory] = []
        self.criticised: set[int] = set()
        self.awaiting: list[Awaiting] = []
        self.samples: list[tuple[float, Sample]] = []
        self.counts = dict.fromkeys(COUNTS, 0)
        self.adapter = ""
        self._last: tuple | None = None
        self._window_stats: dict[str, list[float]] = {}

    # ----- hooks called by the trainer -----
    def use_sink(self, sink: EventSink) -> None:
        self.sink = sink

    def replay(self, buffer: ReplayBuffer) -> MixedBuffer:
        return self.buffer

    def note_decision(
        self, step: int, episode: int, obs, features: np.ndarray, mask: np.ndarray, action: int
    ):
        if self.config.actor:
            self._last = (step, episode, obs.copy(), features, mask, int(action))

    def note_step_reward(self, reward: float) -> None:
        """The first step's reward of the last decision: low ones wait for the actor."""
        last, self._last = self._last, None
        if last is None or not reward < self.config.r_bar:
            return
        self.window.append(Decision(*last, step_reward=float(reward)))
        if len(self.window) > WINDOW_LIMIT:
            self.window.pop(0)

    def note_stored(
        self, row: int, episode_step: int, max_rho: float, action: int, step_reward: float
    ) -> None:
        """A transition went into the replay buffer as ``row``."""
        self.trajectory.append(TracedDecision(episode_step, row, max_rho, action, step_reward))

    def end_episode(self, episode: int, survived: int, max_steps: int) -> None:
        if self.trajectory:
            self.finished.append(Trajectory(episode, survived, max_steps, self.trajectory))
            self.finished = self.finished[-FINISHED_EPISODES_KEPT:]
        self.trajectory = []

    def after_step(self, step: int) -> None:
        config = self.config
        if config.actor and step % config.actor_every == 0:
            self.actor_pass(step)
        if config.critic and step % config.critic_every == 0:
            self.critic_pass(step)
        if self.awaiting and step % APPROVAL_POLL_STEPS == 0:
            self.poll_approvals(step)

    # ----- actor -----
    @property
    def budget_left(self) -> int:
        return max(0, self.config.llm_budget - self.counts["calls"])

    def pick(self, window: list[Decision], step: int) -> list[Decision]:
        """At most ``actor_batch`` decisions of the window, by ``actor_selection``: the worst
        first, or uniformly at random (drawn from the seed and step: nothing to checkpoint)."""
        batch = self.config.actor_batch
        if self.config.actor_selection == "worst":
            return sorted(window, key=lambda d: (d.step_reward, d.step))[:batch]
        rng = np.random.default_rng([self.config.seed, 3, step])
        chosen = rng.choice(len(window), size=min(batch, len(window)), replace=False)
        return [window[i] for i in sorted(chosen)]

    def actor_pass(self, step: int) -> None:
        window, self.window = self.window, []
        for decision in self.pick(window, step):
            if self.budget_left == 0:
                break
            refinement_id = f"r{self.counts['refinements'] + 1:05d}"
            started = time.perf_counter()
            refinement = self.actor.refine(decision, refinement_id, step, self.budget_left)
            self._stat("llm/refine_seconds", time.perf_counter() - started)
            for record in refinement.event.rounds:
                self._stat("llm/call_seconds", record.seconds)
            self.counts["calls"] += refinement.calls
            self.counts["refinements"] += 1
            self.sink.emit(refinement.event)
            if not refinement.accepted:
                continue
            self.counts["accepted"] += 1
            awaiting = Awaiting(
                refinement_id,
                refinement.transition,
                refinement.sample,
                self.buffer_priority(refinement.transition.reward, refinement.rl_reward),
                refinement.rl_reward,
            )
            if self.config.require_approval:
                self.awaiting.append(awaiting)
            else:
                self._admit(awaiting, step)

    def buffer_priority(self, reward: float, rl_reward: float) -> float:
        return priority(reward, rl_reward, self.buffer.temperature, self.buffer.max_weight)

    def poll_approvals(self, step: int) -> None:
        still = []
        for awaiting in self.awaiting:
            verdict = self.sink.is_approved(awaiting.refinement_id)
            if verdict is None:
                still.append(awaiting)
            elif verdict:
                self._admit(awaiting, step)
            else:
                self.counts["rejected"] += 1
        self.awaiting = still

    def _admit(self, awaiting: Awaiting, step: int) -> None:
        self.buffer.add_refinement(awaiting.transition, awaiting.rl_reward)
        self.counts["approved"] += 1
        if awaiting.sample is not None:
            self.samples.append((awaiting.priority, awaiting.sample))
            self.counts["since_finetune"] += 1
        every = self.config.finetune_every
        if every and self.counts["since_finetune"] >= every:
            self.finetune_round(step)

    # ----- critic -----
    def critic_pass(self, step: int) -> None:
        if self.budget_left < self.critic.config.calls_per_trajectory():
            return
        pool = [t for t in self.finished if t.episode not in self.criticised]
        chosen = select(pool, self.critic.config.selection, self.critic.config.threshold, 1)
        if not chosen:
            return
        trajectory = chosen[0]
        self.criticised.add(trajectory.episode)
        result = self.critic.criticise(trajectory, self.budget_left)
        self.counts["calls"] += result.calls
        self.counts["critic_calls"] += result.calls
        self.counts["critic_refused"] += len(result.refused) + bool(result.error)
        self._stat("llm/critic_seconds", result.seconds)
        by_step = {d.step: d for d in trajectory.decisions}
        applied = []
        for adjustment in result.adjustments:
            decision = by_step[adjustment.step]
            try:
                self.buffer.rl.shape_reward(decision.row, adjustment.value)
            except RowOverwrittenError:
                result.refused.append(f"step {adjustment.step}: its transition has left the replay buffer")
                continue
            self.counts["shapings"] += 1
            applied.append(asdict(adjustment))
            self.sink.emit(
                ShapingEvent(
                    step=step,
                    episode_index=trajectory.episode,
                    trajectory_step=adjustment.step,
                    adjustment=adjustment.value,
                    rationale=adjustment.rationale,
                    model=self.llm.name,
                )
            )
        if result.error or result.refused:
            log.warning(
                "critic on episode %d: %s", trajectory.episode, result.error or "; ".join(result.refused)
            )
        record = asdict(result) | {"step": step, "applied": applied, "model": self.llm.name}
        record.pop("adjustments")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir / "critic.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    # ----- fine-tuning -----
    def finetune_round(self, step: int) -> None:
        self.counts["since_finetune"] = 0
        best = [s for _, s in sorted(self.samples, key=lambda p: -p[0])[: self.config.finetune_every]]
        adapter = lora_round(
            self.llm,
            best,
            self.out_dir / "adapters",
            replace(self.config.finetune, seed=self.config.seed),
            step=step,
            adapter=self.adapter,
            export=self.config.llm == "openai",
            sink=self.sink,
        )
        if adapter is not None:
            self.adapter = adapter
            self.counts["finetunes"] += 1

    # ----- reporting -----
    def _stat(self, key: str, value: float) -> None:
        self._window_stats.setdefault(key, []).append(float(value))

    def metrics(self) -> dict[str, float]:
        """Namespaced ``llm/...`` figures for the trainer's metrics report (resets the window)."""
        c = self.counts
        values = {f"llm/{k}": float(v) for k, v in c.items() if k != "since_finetune"}
        values["llm/acceptance_rate"] = c["accepted"] / c["refinements"] if c["refinements"] else 0.0
        values["llm/buffer_size"] = float(len(self.buffer.llm))
        values["llm/awaiting_approval"] = float(len(self.awaiting))
        values.update({k: float(np.mean(v)) for k, v in self._window_stats.items() if v})
        self._window_stats = {}
        return values

    # ----- checkpoints -----
    def state_dict(self) -> dict:
        return {
            "llm_buffer": self.buffer.state_dict(),
            "window": [{**vars(d), "obs": freeze_obs(d.obs)} for d in self.window],
            "trajectory": [vars(d).copy() for d in self.trajectory],
            "finished": [
                {**vars(t), "decisions": [vars(d).copy() for d in t.decisions]} for t in self.finished
            ],
            "criticised": sorted(self.criticised),
            "awaiting": [vars(a).copy() for a in self.awaiting],
            "samples": list(self.samples),
            "counts": dict(self.counts),
            "adapter": self.adapter,
            "stats": {k: list(v) for k, v in self._window_stats.items()},
            "chooser_rng": self.llm.rng.bit_generator.state if isinstance(self.llm, RandomChooser) else None,
        }

    def _traced_decision_loader(self, state: dict):
        """TracedDecision from its checkpointed dict. Checkpoints written before the buffer
        counted its rows kept a ``serial`` per decision and a ``stored`` count beside the buffer;
        both count the same decisions, so a serial is a row once shifted by their difference."""
        if "stored" not in state:
            return lambda d: TracedDecision(**d)
        shift = state["stored"] - self.buffer.rl.added

        def legacy(d: dict) -> TracedDecision:
            d = dict(d)
            serial = d.pop("serial")
            return TracedDecision(**d, row=serial - shift)

        return legacy

    def load_state_dict(self, state: dict) -> None:
        """Restore; call once the env is back at the checkpoint's step (observations re-attach to it)."""
        self.buffer.load_state_dict(state["llm_buffer"])
        self.window = [Decision(**{**d, "obs": thaw_obs(d["obs"], self.env)}) for d in state["window"]]
        traced = self._traced_decision_loader(state)
        self.trajectory = [traced(d) for d in state["trajectory"]]
        self.finished = [
            Trajectory(**{**t, "decisions": [traced(d) for d in t["decisions"]]}) for t in state["finished"]
        ]
        self.criticised = set(state["criticised"])
        self.awaiting = [Awaiting.from_state(a) for a in state["awaiting"]]
        self.samples = list(state["samples"])
        self.counts = dict(state["counts"])
        self._window_stats = {k: list(v) for k, v in state["stats"].items()}
        if state["chooser_rng"] is not None and isinstance(self.llm, RandomChooser):
            self.llm.rng.bit_generator.state = state["chooser_rng"]
        self.adapter = state["adapter"]
        if self.adapter and hasattr(self.llm, "load_adapter"):
            self.llm.load_adapter(self.adapter)
