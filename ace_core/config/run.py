"""Run configuration: :class:`TrainConfig`, shared by the CLI, the web form and checkpoints.

A run's own settings (environment, loop, expert teacher, ACE's schedule and budget) are its fields;
the settings of each part are a section declared once in :mod:`ace_core.config.sections`
(``sac``, ``llm_actor``, ``llm_critic``, ``finetune``) and handed to that part as they are.

The CLI and the web form stay flat: :func:`config_fields` lists every flat setting (TrainConfig's
own fields and the section fields that carry a flat name) with its type, default and docstring.
:meth:`TrainConfig.to_dict` gives the flat settings, :meth:`TrainConfig.full_dict` every setting
(what checkpoints store), and :meth:`TrainConfig.from_dict` reads either. A resumed run compares
only the settings its checkpoint has (:meth:`TrainConfig.differences`), so a setting added later
with a default never refuses an older run.

:meth:`TrainConfig.validate` raises :class:`ConfigError` naming the flat setting, the bad value and
what is accepted, so a bad config never starts a run.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace_core.config.checks import (
    ACTOR_ANSWERS,
    ACTOR_SELECTIONS,
    CRITIC_FORMATS,
    HEADS,
    LLM_BACKENDS,
    MAX_STEPS,
    TRAJECTORY_SELECTIONS,
    class_field_docs,
    in_range,
    one_of,
)
from ace_core.config.sections import ActorConfig, CriticConfig, FinetuneConfig, SACConfig
from ace_core.errors import ConfigError
from ace_core.grid.demand import DEMAND_SCALE_RANGE

SECTIONS: dict[str, type] = {
    "sac": SACConfig,
    "llm_actor": ActorConfig,
    "llm_critic": CriticConfig,
    "finetune": FinetuneConfig,
}
"""TrainConfig's sections: field name -> its dataclass"""


@dataclass(init=False)
class TrainConfig:
    """A run's settings: its own (the loop, the expert teacher, ACE's schedule) and one section per
    part (see the module docstring). Built from flat names, ``TrainConfig(hidden=64, llm="random")``,
    or with whole sections, ``TrainConfig(sac=SACConfig(hidden=64))``."""

    env: str = "rte_case14_realistic"
    """grid2op environment name (bundled test copy, or a downloaded dataset when present)"""
    steps: int = 20_000
    """environment steps to train for"""
    seed: int = 0
    """seed for torch, numpy, the environment and the scenario order"""
    rho_threshold: float = 0.9
    """the agent acts only when max rho reaches this; below it, reconnect lines or do nothing"""
    episode_length: int = 288
    """steps per train and validation episode (288 = one day, 864 = three): the chronics are cut into episodes this long and the split follows the cut, so with 864 a run trains and validates on three-day episodes, none of whose days lie in the three-day test split"""
    opponent: str = "env"
    """line attacks in the train episodes (ace_core/grid/opponents.py): env (the env's own), none, or random-line (grid2op's RandomLineOpponent); validation days are played as the env is, so the best checkpoint is chosen on the days the policy is judged on"""
    action_subset: str = ""
    """file of topology action indices (one per line) to restrict the space to; empty = all actions"""
    init_from: str = ""
    """checkpoint (or run directory) whose policy this run starts from, e.g. a behaviour-cloned
    one from `pretrain`: its networks and feature scale; same action space required; empty = fresh"""
    decisions: int = 0
    """agent decisions to train for, a budget beside steps: the run stops at whichever it reaches first (0 = steps alone)"""
    validate_every: int = 0
    """agent decisions between validations: the plain policy plays the validation days, and the best one is kept as best.pt, which evaluation and deployment use (0 = no validation: the last policy)"""
    validation_seeds: int = 1
    """grid seeds each validation day is played with"""
    validation_demand_scale: float = 1.0
    """also play the validation days with every load and production multiplied by this (0.8-1.3; ace_core/grid/demand.py), a harder test of the same days; the mean survival over both chooses best.pt (1.0 = the days as they are only)"""
    # --- imitation start ---
    pretrain_mine: str = ""
    """start from behaviour cloning of the expert: a mine directory (`python -m ace_core mine`), auto to mine the train days first (cached: reused by every run with the same env, expert and seeds), or empty for no imitation start"""
    pretrain_expert: str = "greedy"
    """the expert that auto mines with (greedy, greedy:BUDGET or greedy:key=value,...)"""
    pretrain_seeds: int = 2
    """grid seeds each train day is mined with (auto)"""
    pretrain_demand_scales: str = ""
    """with auto, also mine the train days heavier: demand scales, comma-separated (e.g. 1.05,1.1; each 0.8-1.3, ace_core/grid/demand.py); heavier days hold many more of the decisions where doing nothing overloads the grid, and the clone and the anchor learn from every mine; empty = the days as they are only"""
    pretrain_epochs: int = 30
    """behaviour-cloning epochs over the mined expert decisions"""
    anchor_mine: str = ""
    """mine directories (comma-separated) whose expert decisions the anchor term clones during RL; empty = the run's pretrain_mine"""
    sac: SACConfig = dataclasses.field(default_factory=SACConfig)
    """the SAC learner"""
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
    teacher_anchor: bool = False
    """the teacher's decisions join the anchor term's mined ones (needs anchor > 0): with teacher_budget 0 the policy clones what simulating its own top k chose, on the states the run reaches"""
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
    beta: float = 0.25
    """fraction of each batch drawn from the LLM buffer"""
    actor_every: int = 200
    """environment steps between LLM actor passes"""
    critic_every: int = 2_000
    """environment steps between LLM critic passes"""
    finetune_every: int = 100
    """accepted refinements between LoRA fine-tuning rounds (0 disables fine-tuning)"""
    finetune: FinetuneConfig = dataclasses.field(default_factory=FinetuneConfig)
    """each LoRA round"""
    llm_budget: int = 700
    """maximum LLM calls in the whole run"""
    require_approval: bool = False
    """refinements wait for a reviewer's approval before entering the mixed buffer"""
    actor_batch: int = 4
    """low-reward decisions refined per actor pass at most"""
    actor_selection: str = "worst"
    """which of the decisions below r_bar an actor pass refines: worst (lowest step reward first, so game overs) or random (uniform, so overloads the grid survived get refined too)"""
    llm_actor: ActorConfig = dataclasses.field(default_factory=ActorConfig)
    """the LLM as Policy Actor"""
    llm_critic: CriticConfig = dataclasses.field(default_factory=CriticConfig)
    """the LLM as Value Critic"""
    priority_temperature: float = 0.1
    """T of the mixed buffer's priority w = min(exp((r_llm - r_rl) / T), priority_max)"""
    priority_max: float = 10.0
    """clip of the mixed buffer's priority (and policy-loss weight) of a refinement"""
    llm_timeout: float = 60.0
    """seconds per request to an OpenAI-compatible server (openai backend)"""

    def __init__(self, **values: Any) -> None:
        fields = _flat_fields()
        for name, kind in SECTIONS.items():
            section = values.pop(name, None)
            if section is not None and not isinstance(section, kind):
                raise TypeError(f"TrainConfig {name} must be a {kind.__name__}, got {section!r}")
            # a copy: two configs never share a section
            setattr(self, name, dataclasses.replace(section) if section is not None else kind())
        for f in dataclasses.fields(self):
            if f.name not in SECTIONS:
                setattr(self, f.name, values.pop(f.name, f.default))
        for name, value in values.items():
            field = fields.get(name)
            if field is None or not field.section:
                raise TypeError(f"TrainConfig got an unexpected keyword argument {name!r}")
            setattr(getattr(self, field.section), field.attribute, value)

    def validate(self) -> TrainConfig:
        """Return self, or raise ConfigError naming the first bad field."""
        self._check_run()
        self._check_learning()
        self._check_teacher()
        self._check_llm()
        return self

    def _check_run(self) -> None:
        from ace_core.grid.envs import available_env_names
        from ace_core.grid.opponents import opponent_kwargs

        names = available_env_names()
        if self.env not in names:
            raise ConfigError(f"unknown env {self.env!r}; available: {', '.join(names)}")
        in_range("steps", self.steps, 1, MAX_STEPS)
        in_range("seed", self.seed, 0, 2**31 - 1)
        in_range("rho_threshold", self.rho_threshold, 0.0, 2.0)
        in_range("episode_length", self.episode_length, 2, MAX_STEPS)
        opponent_kwargs(self.env, self.opponent)  # an unknown opponent, or random-line without attacked lines
        one_of("head", self.sac.head, HEADS)
        if self.action_subset and not Path(self.action_subset).is_file():
            raise ConfigError(
                f"action_subset {self.action_subset!r} is not a file; give a file of action indices or leave it empty"
            )
        if self.init_from and not Path(self.init_from).exists():
            raise ConfigError(
                f"init_from {self.init_from!r} does not exist; give a checkpoint file or run directory, or leave it empty"
            )
        in_range("decisions", self.decisions, 0, MAX_STEPS)
        in_range("validate_every", self.validate_every, 0, MAX_STEPS)
        in_range("validation_seeds", self.validation_seeds, 1, 100)
        in_range("validation_demand_scale", self.validation_demand_scale, *DEMAND_SCALE_RANGE)
        self._check_pretrain()
        self._check_anchor()

    def pretrain_scales(self) -> tuple[float, ...]:
        """The demand scales auto mines at: 1.0 (the days as they are), then ``pretrain_demand_scales``."""
        from ace_core.grid.demand import check_demand_scale

        scales = [1.0]
        for part in self.pretrain_demand_scales.split(","):
            if not part.strip():
                continue
            try:
                value = float(part)
            except ValueError:
                value = part.strip()
            try:
                scale = check_demand_scale(value)
            except ConfigError as exc:
                raise ConfigError(f"pretrain_demand_scales: {exc}") from None
            if scale in scales:
                raise ConfigError(
                    f"pretrain_demand_scales: {scale} is given twice or is 1 (the days as they are are "
                    "always mined); give distinct scales other than 1, e.g. 1.05,1.1"
                )
            scales.append(scale)
        return tuple(scales)

    def anchor_mines(self) -> list[str]:
        """The mines the anchor term clones: ``anchor_mine``'s, else the pretrain mine."""
        if self.anchor_mine:
            return [part.strip() for part in self.anchor_mine.split(",") if part.strip()]
        return [self.pretrain_mine] if self.pretrain_mine else []

    def _check_anchor(self) -> None:
        in_range("anchor", self.sac.anchor, 0.0, 100.0)
        in_range("anchor_action_weight", self.sac.anchor_action_weight, 0.01, 100.0)
        if self.sac.anchor == 0:
            return
        if not self.anchor_mines():
            raise ConfigError(
                "anchor > 0 clones the expert's mined decisions during RL; give anchor_mine "
                "(a mine directory) or pretrain_mine, or set anchor=0"
            )
        if not self.anchor_mine:
            return  # the pretrain mine is checked with the pretrain settings
        for mine in self.anchor_mines():
            if not (Path(mine) / "summary.json").is_file():
                raise ConfigError(
                    f"anchor_mine {mine!r} is not a finished mine (no summary.json); give directories "
                    "written by `python -m ace_core mine`, comma-separated, or leave it empty for the "
                    "pretrain mine"
                )

    def _check_pretrain(self) -> None:
        in_range("pretrain_seeds", self.pretrain_seeds, 1, 1_000)
        in_range("pretrain_epochs", self.pretrain_epochs, 1, 10_000)
        if len(self.pretrain_scales()) > 1 and self.pretrain_mine != "auto":
            raise ConfigError(
                "pretrain_demand_scales are the heavier days auto mines; set pretrain_mine=auto, or "
                "mine heavier days with `python -m ace_core mine --demand-scale` and name them in anchor_mine"
            )
        if not self.pretrain_mine:
            return
        if self.init_from:
            raise ConfigError("init_from and pretrain_mine both choose the starting policy; give one of them")
        if self.action_subset:
            raise ConfigError(
                "pretrain_mine clones the expert over the full action space; leave action_subset "
                "empty with it (or give no pretrain_mine)"
            )
        if self.pretrain_mine == "auto":
            from ace_core.config.expert import parse_expert_spec

            name, _, settings = self.pretrain_expert.partition(":")
            if name != "greedy":
                raise ConfigError(
                    f"pretrain_expert {self.pretrain_expert!r}: unknown expert {name!r}; accepted: "
                    "greedy, greedy:BUDGET or greedy:key=value,..."
                )
            try:
                parse_expert_spec(settings)
            except ConfigError as exc:
                raise ConfigError(f"pretrain_expert: {exc}") from None
        elif not (Path(self.pretrain_mine) / "summary.json").is_file():
            raise ConfigError(
                f"pretrain_mine {self.pretrain_mine!r} is not a finished mine (no summary.json); "
                "give a directory written by `python -m ace_core mine`, auto, or leave it empty"
            )

    def _check_learning(self) -> None:
        in_range("hidden", self.sac.hidden, 8, 4096)
        in_range("gamma", self.sac.gamma, 0.0, 1.0)
        in_range("tau", self.sac.tau, 0.0, 1.0)
        in_range("policy_lr", self.sac.policy_lr, 1e-7, 1.0)
        in_range("q_lr", self.sac.q_lr, 1e-7, 1.0)
        in_range("batch_size", self.batch_size, 1, 65_536)
        in_range("buffer_size", self.buffer_size, 1, 10_000_000)
        in_range("learning_starts", self.learning_starts, 1, 10_000_000)
        if self.learning_starts < self.batch_size:
            raise ConfigError(
                f"learning_starts ({self.learning_starts}) must be at least batch_size ({self.batch_size})"
            )
        in_range("update_every", self.update_every, 1, 10_000)
        in_range("gradient_steps", self.gradient_steps, 1, 1_000)
        in_range("target_entropy_scale", self.sac.target_entropy_scale, 0.0, 1.0)
        in_range("init_alpha", self.sac.init_alpha, 1e-6, 100.0)
        in_range("actor_delay", self.sac.actor_delay, 0, 10_000_000)
        in_range("conservative", self.sac.conservative, 0.0, 100.0)
        in_range("checkpoint_every", self.checkpoint_every, 1, MAX_STEPS)
        in_range("log_every", self.log_every, 1, MAX_STEPS)
        in_range("torch_threads", self.torch_threads, 1, 256)

    def _check_teacher(self) -> None:
        in_range("teacher_prob", self.teacher_prob, 0.0, 1.0)
        in_range("teacher_steps", self.teacher_steps, 1, MAX_STEPS)
        in_range("teacher_top_k", self.teacher_top_k, 0, 64)
        in_range("teacher_budget", self.teacher_budget, 0, 1024)
        if self.teacher_prob > 0 and self.teacher_top_k + self.teacher_budget == 0:
            raise ConfigError(
                "teacher_prob > 0 needs candidates for the expert to simulate; "
                "set teacher_top_k or teacher_budget above 0 (or teacher_prob=0)"
            )
        if self.teacher_anchor and (self.teacher_prob == 0 or self.sac.anchor == 0):
            raise ConfigError(
                "teacher_anchor clones the teacher's decisions in the anchor term; "
                "set teacher_prob > 0 and anchor > 0 (or leave teacher_anchor off)"
            )

    def _check_llm(self) -> None:
        one_of("llm", self.llm, LLM_BACKENDS)
        in_range("r_bar", self.r_bar, -10.0, 10.0)
        in_range("shaping_k", self.llm_critic.k, 0.0, 10.0)
        in_range("beta", self.beta, 0.0, 1.0)
        in_range("imitation", self.sac.imitation, 0.0, 100.0)
        in_range("actor_every", self.actor_every, 1, MAX_STEPS)
        in_range("critic_every", self.critic_every, 1, MAX_STEPS)
        in_range("finetune_every", self.finetune_every, 0, 100_000)
        one_of("trajectory_selection", self.llm_critic.selection, TRAJECTORY_SELECTIONS)
        in_range("llm_budget", self.llm_budget, 0, 1_000_000)
        in_range("actor_batch", self.actor_batch, 1, 10_000)
        one_of("actor_selection", self.actor_selection, ACTOR_SELECTIONS)
        in_range("actor_candidates", self.llm_actor.candidates, 1, 26)
        in_range("actor_rounds", self.llm_actor.rounds, 1, 26)
        one_of("actor_answer", self.llm_actor.answer, ACTOR_ANSWERS)
        if self.llm_actor.calibrate and self.llm_actor.answer != "letter":
            raise ConfigError(
                "llm_calibrate removes a model's prior for option letters; it needs actor_answer='letter'"
            )
        in_range("critic_threshold", self.llm_critic.threshold, 0.0, 10.0)
        one_of("critic_format", self.llm_critic.format, CRITIC_FORMATS)
        in_range("critic_key_steps", self.llm_critic.choice_key_steps, 1, 26)
        in_range("priority_temperature", self.priority_temperature, 1e-3, 100.0)
        in_range("priority_max", self.priority_max, 1.0, 1e6)
        in_range("finetune_max_steps", self.finetune.max_steps, 0, 1_000_000)
        in_range("llm_timeout", self.llm_timeout, 0.1, 3600.0)
        if self.llm == "random" and self.critic:
            raise ConfigError(
                "llm='random' is the actor control and has no language model for the critic; "
                "add --no-critic (critic=False) or choose llm local or openai"
            )

    def to_dict(self) -> dict[str, Any]:
        """The flat settings (what the CLI, the web form and a run's record use)."""
        return {name: self.get(name) for name in _flat_fields()}

    def full_dict(self) -> dict[str, Any]:
        """Every setting, sections nested (what checkpoints store)."""
        return dataclasses.asdict(self)

    def get(self, name: str) -> Any:
        """The value of a flat setting."""
        field = _flat_fields()[name]
        return getattr(getattr(self, field.section) if field.section else self, field.attribute)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from flat settings or a :meth:`full_dict` (or a mix), refusing unknown keys and
        values of the wrong type. Settings the dict lacks keep their defaults."""
        fields = _flat_fields()
        unknown = sorted(k for k in data if k not in fields and k not in SECTIONS)
        if unknown:
            raise ConfigError(f"unknown config keys {unknown}; accepted: {sorted(fields)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name in SECTIONS:
                values[name] = _section_from_dict(name, value)
            else:
                values[name] = _typed(name, value, type(fields[name].default))
        return cls(**values)

    def differences(self, saved: dict[str, Any]) -> list[str]:
        """The settings ``saved`` (a :meth:`to_dict` or :meth:`full_dict`, as a checkpoint holds it)
        gives a value different from this config's; settings it lacks (added since) are not compared."""
        other = TrainConfig.from_dict(saved)
        fields = _flat_fields()
        paths = []
        for name, value in saved.items():
            if name in SECTIONS:
                paths += [(name, attribute) for attribute in value]
            else:
                paths.append((fields[name].section, fields[name].attribute))
        by_path = {(f.section, f.attribute): name for name, f in fields.items()}
        changed = []
        for section, attribute in dict.fromkeys(paths):
            mine, theirs = (getattr(getattr(c, section) if section else c, attribute) for c in (self, other))
            if mine != theirs:
                changed.append(by_path.get((section, attribute), f"{section}.{attribute}"))
        return changed


@dataclass(frozen=True)
class ConfigField:
    """One flat setting: its name (flag, form field, key), type, default and docstring."""

    name: str
    type: type
    default: Any
    doc: str
    section: str
    """the TrainConfig section holding it ("" for TrainConfig's own)"""
    attribute: str
    """its name in that section"""


@functools.cache
def _flat_fields() -> dict[str, ConfigField]:
    out: dict[str, ConfigField] = {}
    own_docs = class_field_docs(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        if f.name not in SECTIONS:
            out[f.name] = ConfigField(
                f.name, type(f.default), f.default, own_docs.get(f.name, ""), "", f.name
            )
            continue
        kind = SECTIONS[f.name]
        docs, defaults = class_field_docs(kind), kind()
        for g in dataclasses.fields(kind):
            if "flat" in g.metadata:
                default = getattr(defaults, g.name)
                flat_name = g.metadata["flat"]
                out[flat_name] = ConfigField(
                    flat_name, type(default), default, docs.get(g.name, ""), f.name, g.name
                )
    return out


def config_fields() -> list[ConfigField]:
    """Every flat setting, in TrainConfig's order (sections where they are declared)."""
    return list(_flat_fields().values())


def field_docs(cls: type | None = None) -> dict[str, str]:
    """The docstring of each flat setting; with a dataclass ``cls``, of each of its fields."""
    if cls is None or cls is TrainConfig:
        return {name: f.doc for name, f in _flat_fields().items()}
    return class_field_docs(cls)


def _typed(name: str, value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if expected is tuple and isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{name} must be {expected.__name__}, got {value!r}")
    return value


def _section_from_dict(name: str, data: Any):
    kind = SECTIONS[name]
    if not isinstance(data, dict):
        raise ConfigError(f"{name} must be a dict of {kind.__name__} settings, got {data!r}")
    defaults = kind()
    known = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown {name} settings {unknown}; accepted: {known}")
    return kind(**{k: _typed(f"{name}.{k}", v, type(getattr(defaults, k))) for k, v in data.items()})
