"""Run configuration: one flat dataclass shared by the CLI, the web form and checkpoints.

Every field has a docstring (shown by ``python -m ace_core train --help`` and by the web form).
:meth:`TrainConfig.validate` raises :class:`ConfigError` naming the field, the bad value and what
is accepted, so a bad config never starts a run.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace_core.errors import ConfigError

HEADS = ("auto", "flat", "factorised")
LLM_BACKENDS = ("none", "local", "openai", "random")
TRAJECTORY_SELECTIONS = ("reward", "state", "action")
CRITIC_FORMATS = ("choice", "json")
ACTOR_ANSWERS = ("letter", "text")
ACTOR_SELECTIONS = ("worst", "random")
MAX_STEPS = 100_000_000


@dataclass
class TrainConfig:
    env: str = "rte_case14_realistic"
    """grid2op environment name (bundled test copy, or a downloaded dataset when present)"""
    steps: int = 20_000
    """environment steps to train for"""
    seed: int = 0
    """seed for torch, numpy, the environment and the scenario order"""
    rho_threshold: float = 0.9
    """the agent acts only when max rho reaches this; below it, reconnect lines or do nothing"""
    action_subset: str = ""
    """file of topology action indices (one per line) to restrict the space to; empty = all actions"""
    head: str = "auto"
    """policy/Q head: flat (one output per action), factorised (substation then bus bits) or auto"""
    hidden: int = 256
    """width of the hidden layers"""
    gamma: float = 0.99
    """discount factor per agent decision"""
    tau: float = 0.005
    """target network smoothing coefficient"""
    policy_lr: float = 3e-4
    """actor learning rate"""
    q_lr: float = 3e-4
    """critic learning rate"""
    batch_size: int = 64
    """transitions per gradient update"""
    buffer_size: int = 100_000
    """replay buffer capacity, in agent decisions"""
    learning_starts: int = 256
    """agent decisions collected before the first update"""
    update_every: int = 1
    """one gradient update every this many agent decisions (the default update ratio)"""
    gradient_steps: int = 1
    """gradient updates each time an update is due (with update_every, the update-to-data ratio; decisions are a small share of the steps, so more updates per decision cost little)"""
    target_entropy_scale: float = 0.25
    """target entropy = scale * log(number of legal actions), CleanRL-style"""
    checkpoint_every: int = 5_000
    """environment steps between checkpoints (one is always written at the end)"""
    log_every: int = 500
    """environment steps between metric reports"""
    torch_threads: int = 1
    """torch CPU threads; one is fastest on a busy 2-core machine"""
    # --- expert-guided exploration ---
    teacher_prob: float = 0.0
    """probability that a decision at step 0 plays the simulated expert's action instead of the policy's; it falls linearly to 0 at teacher_steps (0 = off). The expert's transitions enter the same replay buffer"""
    teacher_steps: int = 20_000
    """environment steps over which teacher_prob falls to 0 (counted from step 0, so a resume that extends --steps keeps the schedule)"""
    teacher_top_k: int = 4
    """the expert simulates reconnect-or-nothing, the policy's k most likely actions ..."""
    teacher_budget: int = 16
    """... and this many greedy candidates (reconnections, topologies at the ends of the most loaded lines), and plays the lowest simulated max rho"""
    # --- LLM co-evolution (ACE) ---
    llm: str = "none"
    """LLM backend: none (plain SAC), local (transformers), openai (OpenAI-compatible server) or random (control: a uniform pick among the actor's candidates, same simulation gate)"""
    llm_model: str = ""
    """model id, folder or served model name; empty means the offline default"""
    actor: bool = True
    """use the LLM as Policy Actor (refines low-reward transitions)"""
    critic: bool = True
    """use the LLM as Value Critic (reshapes trajectory rewards)"""
    r_bar: float = 0.0
    """transitions with reward below this are refined by the LLM actor"""
    shaping_k: float = 0.1
    """K of the critic's adjustments {-2K, -K, +K, +2K}"""
    beta: float = 0.25
    """fraction of each batch drawn from the LLM buffer"""
    imitation: float = 0.0
    """weight of a behaviour-cloning term on the LLM buffer's rows, priority * -log pi(a_llm | s), added to the policy loss (0: off, the paper's weighted policy loss alone)"""
    actor_every: int = 200
    """environment steps between LLM actor passes"""
    critic_every: int = 2_000
    """environment steps between LLM critic passes"""
    finetune_every: int = 100
    """accepted refinements between LoRA fine-tuning rounds (0 disables fine-tuning)"""
    trajectory_selection: str = "reward"
    """how the critic picks trajectories: reward, state or action"""
    llm_budget: int = 700
    """maximum LLM calls in the whole run"""
    require_approval: bool = False
    """refinements wait for a reviewer's approval before entering the mixed buffer"""
    actor_batch: int = 4
    """low-reward decisions refined per actor pass at most"""
    actor_selection: str = "worst"
    """which of the decisions below r_bar an actor pass refines: worst (lowest step reward first, so game overs) or random (uniform, so overloads the grid survived get refined too)"""
    actor_candidates: int = 6
    """candidate actions listed to the LLM actor (policy top-k, then topologies near loaded lines)"""
    actor_rounds: int = 5
    """choose-simulate-retry rounds per refinement"""
    actor_answer: str = "text"
    """how the LLM actor names its choice: text (options listed unlabelled; each option's own text is scored as the answer, so fine-tuning learns actions, not positions) or letter (options labelled A, B, ...; the answer's letter is scored)"""
    critic_threshold: float = 0.5
    """the critic only reads episodes with a decision whose step reward has |r| above this"""
    critic_format: str = "choice"
    """how the critic answers: choice (per key step, two scored letter questions: which decision, which adjustment; always valid) or json (one free reply in strict JSON with a rationale; for capable models, a 135M one never manages it)"""
    critic_key_steps: int = 1
    """choice format: key steps asked per trajectory (two LLM calls each)"""
    priority_temperature: float = 0.1
    """T of the mixed buffer's priority w = min(exp((r_llm - r_rl) / T), priority_max)"""
    priority_max: float = 10.0
    """clip of the mixed buffer's priority (and policy-loss weight) of a refinement"""
    finetune_max_steps: int = 0
    """optimizer steps per LoRA round at most; 0 = one pass over the samples"""
    llm_timeout: float = 60.0
    """seconds per request to an OpenAI-compatible server (openai backend)"""
    llm_calibrate: bool = False
    """the actor chooses by log p(letter | prompt) - log p(letter | content-free prompt) (contextual calibration, Zhao et al. 2021): removes a model's letter bias; off by default because on held-out cases it lowered the acceptance (docs/ace.md)"""

    def validate(self) -> TrainConfig:
        """Return self, or raise ConfigError naming the first bad field."""
        from ace_core.grid.envs import available_env_names

        names = available_env_names()
        if self.env not in names:
            raise ConfigError(f"unknown env {self.env!r}; available: {', '.join(names)}")
        _in_range("steps", self.steps, 1, MAX_STEPS)
        _in_range("seed", self.seed, 0, 2**31 - 1)
        _in_range("rho_threshold", self.rho_threshold, 0.0, 2.0)
        _one_of("head", self.head, HEADS)
        if self.action_subset and not Path(self.action_subset).is_file():
            raise ConfigError(
                f"action_subset {self.action_subset!r} is not a file; give a file of action indices or leave it empty"
            )
        _in_range("hidden", self.hidden, 8, 4096)
        _in_range("gamma", self.gamma, 0.0, 1.0)
        _in_range("tau", self.tau, 0.0, 1.0)
        _in_range("policy_lr", self.policy_lr, 1e-7, 1.0)
        _in_range("q_lr", self.q_lr, 1e-7, 1.0)
        _in_range("batch_size", self.batch_size, 1, 65_536)
        _in_range("buffer_size", self.buffer_size, 1, 10_000_000)
        _in_range("learning_starts", self.learning_starts, 1, 10_000_000)
        if self.learning_starts < self.batch_size:
            raise ConfigError(
                f"learning_starts ({self.learning_starts}) must be at least batch_size ({self.batch_size})"
            )
        _in_range("update_every", self.update_every, 1, 10_000)
        _in_range("gradient_steps", self.gradient_steps, 1, 1_000)
        _in_range("target_entropy_scale", self.target_entropy_scale, 0.0, 1.0)
        _in_range("checkpoint_every", self.checkpoint_every, 1, MAX_STEPS)
        _in_range("log_every", self.log_every, 1, MAX_STEPS)
        _in_range("torch_threads", self.torch_threads, 1, 256)
        _in_range("teacher_prob", self.teacher_prob, 0.0, 1.0)
        _in_range("teacher_steps", self.teacher_steps, 1, MAX_STEPS)
        _in_range("teacher_top_k", self.teacher_top_k, 0, 64)
        _in_range("teacher_budget", self.teacher_budget, 0, 1024)
        if self.teacher_prob > 0 and self.teacher_top_k + self.teacher_budget == 0:
            raise ConfigError(
                "teacher_prob > 0 needs candidates for the expert to simulate; "
                "set teacher_top_k or teacher_budget above 0 (or teacher_prob=0)"
            )
        _one_of("llm", self.llm, LLM_BACKENDS)
        _in_range("r_bar", self.r_bar, -10.0, 10.0)
        _in_range("shaping_k", self.shaping_k, 0.0, 10.0)
        _in_range("beta", self.beta, 0.0, 1.0)
        _in_range("imitation", self.imitation, 0.0, 100.0)
        _in_range("actor_every", self.actor_every, 1, MAX_STEPS)
        _in_range("critic_every", self.critic_every, 1, MAX_STEPS)
        _in_range("finetune_every", self.finetune_every, 0, 100_000)
        _one_of("trajectory_selection", self.trajectory_selection, TRAJECTORY_SELECTIONS)
        _in_range("llm_budget", self.llm_budget, 0, 1_000_000)
        _in_range("actor_batch", self.actor_batch, 1, 10_000)
        _one_of("actor_selection", self.actor_selection, ACTOR_SELECTIONS)
        _in_range("actor_candidates", self.actor_candidates, 1, 26)
        _in_range("actor_rounds", self.actor_rounds, 1, 26)
        _one_of("actor_answer", self.actor_answer, ACTOR_ANSWERS)
        if self.llm_calibrate and self.actor_answer != "letter":
            raise ConfigError(
                "llm_calibrate removes a model's prior for option letters; it needs actor_answer='letter'"
            )
        _in_range("critic_threshold", self.critic_threshold, 0.0, 10.0)
        _one_of("critic_format", self.critic_format, CRITIC_FORMATS)
        _in_range("critic_key_steps", self.critic_key_steps, 1, 26)
        _in_range("priority_temperature", self.priority_temperature, 1e-3, 100.0)
        _in_range("priority_max", self.priority_max, 1.0, 1e6)
        _in_range("finetune_max_steps", self.finetune_max_steps, 0, 1_000_000)
        _in_range("llm_timeout", self.llm_timeout, 0.1, 3600.0)
        if self.llm == "random" and self.critic:
            raise ConfigError(
                "llm='random' is the actor control and has no language model for the critic; "
                "add --no-critic (critic=False) or choose llm local or openai"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from a dict, refusing unknown keys and values of the wrong type."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"unknown config keys {unknown}; accepted: {sorted(known)}")
        values = {}
        for name, value in data.items():
            expected = type(getattr(cls(), name))
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ConfigError(f"{name} must be {expected.__name__}, got {value!r}")
            values[name] = value
        return cls(**values)


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """The docstring under each dataclass field, read from the source."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def _in_range(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not (low <= value <= high):
        raise ConfigError(f"{name}={value!r} is out of range; accepted: {low} to {high}")


def _one_of(name: str, value: str, accepted: tuple[str, ...]) -> None:
    if value not in accepted:
        raise ConfigError(f"{name}={value!r} is not accepted; choose one of: {', '.join(accepted)}")
