"""The settings of each part of a run, declared once: SAC, the LLM actor, the LLM critic, LoRA.

:class:`~ace_core.config.run.TrainConfig` holds one of each. A field that the CLI and the web form
show carries its flat name (``flat("actor_rounds", 5)``): the name of its flag and form field, and
of its key in a run's flat settings. Fields without one are settings of the code (tests and
benchmarks change them), stored in checkpoints with the rest but not offered as flags.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ace_core.config.checks import CRITIC_FORMATS, MAX_LABELS, TRAJECTORY_SELECTIONS
from ace_core.errors import ConfigError


def flat(name: str, default: Any) -> Any:
    """A field shown as a flag and a form field under ``name``."""
    return dataclasses.field(default=default, metadata={"flat": name})


@dataclass
class SACConfig:
    head: str = flat("head", "auto")
    """policy/Q head: flat (one output per action), factorised (substation then bus bits) or auto"""
    hidden: int = flat("hidden", 256)
    """width of the hidden layers"""
    gamma: float = flat("gamma", 0.99)
    """discount factor per agent decision"""
    tau: float = flat("tau", 0.005)
    """target network smoothing coefficient"""
    policy_lr: float = flat("policy_lr", 3e-4)
    """actor learning rate"""
    q_lr: float = flat("q_lr", 3e-4)
    """critic learning rate"""
    target_entropy_scale: float = flat("target_entropy_scale", 0.25)
    """target entropy = scale * log(number of legal actions), CleanRL-style"""
    init_alpha: float = flat("init_alpha", 1.0)
    """the temperature at the first update (a cloned policy is sharp: a small start keeps the entropy bonus from flattening it)"""
    actor_delay: int = flat("actor_delay", 0)
    """SAC updates during which only the critics learn, the actor and temperature held: a policy started from imitation stays itself until the critics know its values"""
    imitation: float = flat("imitation", 0.0)
    """weight of a behaviour-cloning term on the LLM buffer's rows, priority * -log pi(a_llm | s), added to the policy loss (0: off, the paper's weighted policy loss alone)"""
    anchor: float = flat("anchor", 0.0)
    """weight of a behaviour-cloning term on the expert's mined decisions (anchor_mine), anchor * -log pi(a_expert | s) over a batch of them at every actor update, added to the policy loss: keeps a cloned policy near the expert while RL moves it (0: off)"""
    anchor_action_weight: float = flat("anchor_action_weight", 1.0)
    """how many times each real action (not do-nothing) counts in the anchor term's mean: an expert that mostly waits teaches waiting, and not when to stop (ace_core/rl/cloning.py; 1: every decision alike)"""
    conservative: float = flat("conservative", 0.0)
    """weight of CQL's conservative term (Kumar et al. 2020), conservative * (log sum_a exp Q(s, a) - Q(s, a_taken)), added to each critic's loss: pushes down the values of actions the run never took, so the actor is not drawn to the critics' over-estimates (0: off)"""
    max_grad_norm: float = 10.0
    """gradient norm clipping for actor and critics (keeps Q from running away early)"""


@dataclass
class ActorConfig:
    rounds: int = flat("actor_rounds", 5)
    """choose-simulate-retry rounds per refinement"""
    candidates: int = flat("actor_candidates", 6)
    """candidate actions listed to the LLM actor (policy top-k, then topologies near loaded lines)"""
    policy_top_k: int = 3
    """of which at most this many come from the policy's most likely actions"""
    loaded_lines: int = 3
    """the rest are topologies at the ends of this many most loaded lines (and reconnections)"""
    calibrate: bool = flat("llm_calibrate", False)
    """the actor chooses by log p(letter | prompt) - log p(letter | content-free prompt) (contextual calibration, Zhao et al. 2021): removes a model's letter bias; off by default because on held-out cases it lowered the acceptance (docs/ace.md)"""
    answer: str = flat("actor_answer", "text")
    """how the LLM actor names its choice: text (options listed unlabelled; each option's own text is scored as the answer, so fine-tuning learns actions, not positions) or letter (options labelled A, B, ...; the answer's letter is scored)"""


@dataclass
class CriticConfig:
    k: float = flat("shaping_k", 0.1)
    """K of the critic's adjustments {-2K, -K, +K, +2K}"""
    threshold: float = flat("critic_threshold", 0.5)
    """the critic only reads episodes with a decision whose step reward has |r| above this"""
    selection: str = flat("trajectory_selection", "reward")
    """how the critic picks trajectories: reward, state or action"""
    max_steps_shown: int = 30
    """decisions shown to the LLM (the most extreme ones and the last ones, in step order)"""
    max_key_steps: int = 5
    """adjustments applied per trajectory at most"""
    max_new_tokens: int = 96
    """length of the LLM's reply"""
    prefill: bool = True
    """json format: start the reply with '{"key_steps": [' (local models; servers may not continue a prefill; a run sets it from its backend)"""
    format: str = flat("critic_format", "choice")
    """how the critic answers: choice (per key step, two scored letter questions: which decision, which adjustment; always valid) or json (one free reply in strict JSON with a rationale; for capable models, a 135M one never manages it)"""
    choice_key_steps: int = flat("critic_key_steps", 1)
    """choice format: key steps asked per trajectory (two LLM calls each)"""

    def validate(self) -> CriticConfig:
        if self.selection not in TRAJECTORY_SELECTIONS:
            raise ConfigError(
                f"trajectory selection {self.selection!r}; accepted: {', '.join(TRAJECTORY_SELECTIONS)}"
            )
        if self.format not in CRITIC_FORMATS:
            raise ConfigError(f"critic format {self.format!r}; accepted: {', '.join(CRITIC_FORMATS)}")
        if not 1 <= self.choice_key_steps <= MAX_LABELS:
            raise ConfigError(f"choice_key_steps={self.choice_key_steps}; accepted: 1 to {MAX_LABELS}")
        return self

    def calls_per_trajectory(self) -> int:
        return 2 * self.choice_key_steps if self.format == "choice" else 1


@dataclass
class FinetuneConfig:
    """LoRA settings and the training budget of one fine-tuning round."""

    r: int = 8
    """LoRA rank (size of the low-rank update)"""
    alpha: int = 16
    """LoRA scaling numerator: the update is scaled by alpha / r"""
    dropout: float = 0.05
    """dropout on the LoRA branch during training"""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """names of the linear layers that get a LoRA update (the attention projections)"""
    lr: float = 5e-4
    """AdamW learning rate of the LoRA weights"""
    epochs: int = 1
    """passes over the samples (one pass over 100 samples takes 4-10 min on one busy CPU core)"""
    max_steps: int = flat("finetune_max_steps", 0)
    """optimizer steps per LoRA round at most; 0 = one pass over the samples"""
    batch_size: int = 4
    """samples per optimizer step"""
    max_length: int = 512
    """tokens per sample; longer prompts lose their beginning (the answer is always kept)"""
    max_grad_norm: float = 1.0
    """gradient norm clipping"""
    eval_samples: int = 16
    """samples (the first ones) on which loss_before and loss_after are measured; 0 means all"""
    activation_checkpointing: bool = False
    """recompute activations in the backward pass: far less memory (7B models on one GPU), ~30% slower"""
    resume: bool = True
    """continue training the backend's current adapter (its rank and targets win) instead of a new one"""
    seed: int = 0
    """seed of the LoRA initialisation and of the sample order (a run sets it from its seed)"""

    def validate(self) -> FinetuneConfig:
        """Return self, or raise ConfigError naming the first bad field."""
        checks = [
            ("r", self.r, 1, 1024),
            ("alpha", self.alpha, 1, 4096),
            ("dropout", self.dropout, 0.0, 0.9),
            ("lr", self.lr, 1e-7, 1.0),
            ("epochs", self.epochs, 1, 1000),
            ("max_steps", self.max_steps, 0, 1_000_000),
            ("batch_size", self.batch_size, 1, 1024),
            ("max_length", self.max_length, 8, 1_000_000),
            ("max_grad_norm", self.max_grad_norm, 1e-6, 1e6),
            ("eval_samples", self.eval_samples, 0, 1_000_000),
            ("seed", self.seed, 0, 2**31 - 1),
        ]
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ConfigError(
                    f"FinetuneConfig.{name}={value!r} is out of range; accepted: {low} to {high}"
                )
        if not self.target_modules or not all(isinstance(m, str) and m for m in self.target_modules):
            raise ConfigError(
                f"FinetuneConfig.target_modules={self.target_modules!r}: give module names such as q_proj, v_proj"
            )
        return self
