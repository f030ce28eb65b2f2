"""Run configuration (see :mod:`ace_core.config.run`); the names other modules use, in one place."""

from ace_core.config.checks import (
    ACTOR_ANSWERS,
    ACTOR_SELECTIONS,
    CRITIC_FORMATS,
    HEADS,
    LLM_BACKENDS,
    MAX_STEPS,
    TRAJECTORY_SELECTIONS,
)
from ace_core.config.flat import ConfigField
from ace_core.config.run import SECTIONS, TrainConfig, config_fields, field_docs
from ace_core.config.sections import (
    ActorConfig,
    AnchorConfig,
    CriticConfig,
    FinetuneConfig,
    PretrainConfig,
    SACConfig,
    TeacherConfig,
    ValidationConfig,
)

__all__ = [
    "ACTOR_ANSWERS",
    "ACTOR_SELECTIONS",
    "CRITIC_FORMATS",
    "HEADS",
    "LLM_BACKENDS",
    "MAX_STEPS",
    "SECTIONS",
    "TRAJECTORY_SELECTIONS",
    "ActorConfig",
    "AnchorConfig",
    "ConfigField",
    "CriticConfig",
    "FinetuneConfig",
    "PretrainConfig",
    "SACConfig",
    "TeacherConfig",
    "TrainConfig",
    "ValidationConfig",
    "config_fields",
    "field_docs",
]
