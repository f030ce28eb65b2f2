"""Run configuration: :class:`TrainConfig`, shared by the CLI, the web form and checkpoints.

A run's own settings (environment, loop, ACE's schedule and budget) are its fields; the settings
of each part are a section declared once in :mod:`ace_core.config.sections` (``sac``,
``llm_actor``, ``llm_critic``, ``finetune``, ``pretrain``, ``anchoring``, ``teacher``,
``validation``) and handed to that part as they are.

The CLI and the web form stay flat: :func:`config_fields` lists every flat setting (TrainConfig's
own fields and the section fields that carry a flat name, :mod:`ace_core.config.flat`) with its
type, default, docstring and group. :meth:`TrainConfig.to_dict` gives the flat settings,
:meth:`TrainConfig.full_dict` every setting (what checkpoints store), and
:meth:`TrainConfig.from_dict` reads either: a checkpoint written before a section existed holds
its settings under their flat names. A resumed run compares only the settings its checkpoint has
(:meth:`TrainConfig.differences`), so a setting added later with a default never refuses an older
run.

:meth:`TrainConfig.validate` raises :class:`ConfigError` naming the flat setting, the bad value and
what is accepted (:mod:`ace_core.config.run_checks`), so a bad config never starts a run.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from ace_core.config.checks import class_field_docs
from ace_core.config.flat import ConfigField, flat_fields, section_from_dict, typed
from ace_core.config.run_checks import check_config
from ace_core.config.sections import (
    ACE,
    BUDGET,
    ENVIRONMENT,
    ActorConfig,
    AnchorConfig,
    CriticConfig,
    FinetuneConfig,
    PretrainConfig,
    SACConfig,
    TeacherConfig,
    ValidationConfig,
    grouped,
)
from ace_core.errors import ConfigError

SECTIONS: dict[str, type] = {
    "validation": ValidationConfig,
    "pretrain": PretrainConfig,
    "anchoring": AnchorConfig,
    "sac": SACConfig,
    "teacher": TeacherConfig,
    "llm_actor": ActorConfig,
    "llm_critic": CriticConfig,
    "finetune": FinetuneConfig,
}
"""TrainConfig's sections: field name -> its dataclass"""


@dataclass(init=False)
class TrainConfig:
    """A run's settings: its own (the loop, ACE's schedule) and one section per part (see the
    module docstring). Built from flat names, ``TrainConfig(hidden=64, pretrain_mine="auto")``,
    or with whole sections, ``TrainConfig(sac=SACConfig(hidden=64))``."""

    env: str = grouped(ENVIRONMENT, "rte_case14_realistic")
    """grid2op environment name (bundled test copy, or a downloaded dataset when present)"""
    steps: int = grouped(ENVIRONMENT, 20_000)
    """environment steps to train for (0: only the imitation start, a clone-only run: mine, clone, validate; needs pretrain_mine)"""
    seed: int = grouped(ENVIRONMENT, 0)
    """seed for torch, numpy, the environment and the scenario order"""
    rho_threshold: float = grouped(ENVIRONMENT, 0.9)
    """the agent acts only when max rho reaches this; below it, reconnect lines or do nothing"""
    episode_length: int = grouped(ENVIRONMENT, 288)
    """steps per train and validation episode (288 = one day, 864 = three): the chronics are cut into episodes this long and the split follows the cut, so with 864 a run trains and validates on three-day episodes, none of whose days lie in the three-day test split"""
    opponent: str = grouped(ENVIRONMENT, "env")
    """line attacks in the train episodes (ace_core/grid/opponents.py): env (the env's own), none, random-line (grid2op's RandomLineOpponent, one attack a day) or storm (one every 4 hours), with settings after a colon (storm:cooldown=36); validation days are played as the env is, so the best checkpoint is chosen on the days the policy is judged on"""
    demand_scale: float = grouped(ENVIRONMENT, 1.0)
    """every load and production of the train episodes multiplied by this (0.8-1.3; ace_core/grid/demand.py): heavier days, where doing nothing overloads the grid and most moves do not relieve it, for a policy trained for stress; validation days are played as they are (and at validation_demand_scale), and the ablations' test days at this scale (1.0 = the days as they are)"""
    demand_spread: float = grouped(ENVIRONMENT, 0.0)
    """each load's share of the train episodes' demand drawn per episode (0-0.3, the standard deviation of a log-normal weight; ace_core/grid/demand.py): the same days load the lines otherwise in each episode, as the uneven stress rows do (0.05); validation plays its days as its own settings say (validation_uneven) and the ablations' test days keep their own shares; the train chronics are then read from disk at each reset rather than cached (0 = the days' own shares)"""
    action_subset: str = ""
    """file of topology action indices (one per line) to restrict the space to; empty = all actions"""
    init_from: str = ""
    """checkpoint (or run directory) whose policy this run starts from, e.g. a behaviour-cloned
    one from `pretrain`: its networks and feature scale; same action space required; empty = fresh"""
    decisions: int = grouped(BUDGET, 0)
    """agent decisions to train for, a budget beside steps: the run stops at whichever it reaches first (0 = steps alone)"""
    validation: ValidationConfig = dataclasses.field(default_factory=ValidationConfig)
    """how the best policy is chosen"""
    pretrain: PretrainConfig = dataclasses.field(default_factory=PretrainConfig)
    """the imitation start"""
    anchoring: AnchorConfig = dataclasses.field(default_factory=AnchorConfig)
    """the expert anchor's mines"""
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
    teacher: TeacherConfig = dataclasses.field(default_factory=TeacherConfig)
    """expert-guided exploration"""
    llm: str = grouped(ACE, "none")
    """LLM backend: none (plain SAC), local (transformers), openai (OpenAI-compatible server) or random (control: a uniform pick among the actor's candidates, same simulation gate)"""
    llm_model: str = grouped(ACE, "")
    """model id, folder or served model name; empty means the offline default"""
    actor: bool = grouped(ACE, True)
    """use the LLM as Policy Actor (refines low-reward transitions)"""
    critic: bool = grouped(ACE, True)
    """use the LLM as Value Critic (reshapes trajectory rewards)"""
    r_bar: float = grouped(ACE, 0.0)
    """transitions with reward below this are refined by the LLM actor"""
    beta: float = grouped(ACE, 0.25)
    """fraction of each batch drawn from the LLM buffer"""
    actor_every: int = grouped(ACE, 200)
    """environment steps between LLM actor passes"""
    critic_every: int = grouped(ACE, 2_000)
    """environment steps between LLM critic passes"""
    finetune_every: int = grouped(ACE, 100)
    """accepted refinements between LoRA fine-tuning rounds (0 disables fine-tuning)"""
    finetune: FinetuneConfig = dataclasses.field(default_factory=FinetuneConfig)
    """each LoRA round"""
    llm_budget: int = grouped(ACE, 700)
    """maximum LLM calls in the whole run"""
    require_approval: bool = grouped(ACE, False)
    """refinements wait for a reviewer's approval before entering the mixed buffer"""
    actor_batch: int = grouped(ACE, 4)
    """low-reward decisions refined per actor pass at most"""
    actor_selection: str = grouped(ACE, "worst")
    """which of the decisions below r_bar an actor pass refines: worst (lowest step reward first, so game overs) or random (uniform, so overloads the grid survived get refined too)"""
    llm_actor: ActorConfig = dataclasses.field(default_factory=ActorConfig)
    """the LLM as Policy Actor"""
    llm_critic: CriticConfig = dataclasses.field(default_factory=CriticConfig)
    """the LLM as Value Critic"""
    priority_temperature: float = grouped(ACE, 0.1)
    """T of the mixed buffer's priority w = min(exp((r_llm - r_rl) / T), priority_max)"""
    priority_max: float = grouped(ACE, 10.0)
    """clip of the mixed buffer's priority (and policy-loss weight) of a refinement"""
    llm_timeout: float = grouped(ACE, 60.0)
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
        check_config(self)
        return self

    def anchor_mines(self) -> list[str]:
        """The mines the anchor term clones: ``anchor_mine``'s, else the pretrain mine."""
        return self.anchoring.mines(self.pretrain.mine)

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
                values[name] = section_from_dict(name, SECTIONS[name], value)
            else:
                values[name] = typed(name, value, type(fields[name].default))
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


@functools.cache
def _flat_fields() -> dict[str, ConfigField]:
    return flat_fields(TrainConfig, SECTIONS)


def config_fields() -> list[ConfigField]:
    """Every flat setting, in TrainConfig's order (sections where they are declared)."""
    return list(_flat_fields().values())


def field_docs(cls: type | None = None) -> dict[str, str]:
    """The docstring of each flat setting; with a dataclass ``cls``, of each of its fields."""
    if cls is None or cls is TrainConfig:
        return {name: f.doc for name, f in _flat_fields().items()}
    return class_field_docs(cls)
