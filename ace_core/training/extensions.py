"""The extensions a run's config asks for, built in one place and handed to the trainer, which
never names one (:mod:`ace_core.extension`).

Every run has the expert teacher (:mod:`ace_core.training.teacher`; with ``teacher_prob`` 0 it
never takes a decision, but it still reports and checkpoints its count); a run whose ``llm`` is
not ``none`` adds ACE's :class:`~ace_core.llm.coevolution.CoEvolution`. The order is the order
the trainer asks them: the teacher's choice comes first.
"""

from __future__ import annotations

from collections.abc import Callable

from ace_core.config import TrainConfig
from ace_core.events import NullSink
from ace_core.extension import TrainerExtension
from ace_core.training.setup import RunParts
from ace_core.training.teacher import ExpertTeacher

ExtensionFactory = Callable[[TrainConfig, RunParts], list[TrainerExtension]]
"""What builds a run's extensions from its config and its parts (:func:`extensions_for`)."""


def extensions_for(config: TrainConfig, parts: RunParts) -> list[TrainerExtension]:
    """The extensions of ``config``, sharing the run's ``parts`` (see the module docstring)."""
    extensions: list[TrainerExtension] = [
        ExpertTeacher(config, parts.space, parts.env.action_space, parts.sac, parts.rng, parts.taught)
    ]
    if config.llm != "none":
        from ace_core.llm.coevolution import CoEvolution  # imported only then: it loads transformers

        # the trainer hands every extension the run's sink (use_sink) before anything is reported
        extensions.append(
            CoEvolution(
                config,
                parts.env,
                parts.space,
                parts.features,
                parts.sac,
                parts.buffer,
                NullSink(),
                parts.out_dir,
            )
        )
    return extensions
