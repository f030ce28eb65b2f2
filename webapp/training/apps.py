"""App config for training runs.

A ``db_worker`` process imports the trainer (torch, grid2op: several seconds) when it starts,
before it claims any task, so that a run's first chart point comes seconds after a worker
starts it rather than after the imports.

It registers how the watchdog recovers silent runs (resumed from their last checkpoint, or failed),
silent mines (failed, to be started again) and silent evaluations (failed, to be asked for again)
in :mod:`webapp.jobs.recovery`.
"""

from __future__ import annotations

import logging
import sys

from django.apps import AppConfig

logger = logging.getLogger(__name__)


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Training runs"

    def ready(self) -> None:
        from webapp.jobs.recovery import job_recovery_register

        job_recovery_register(kind="runs", recover="webapp.training.services.recovery.runs_recover_silent")
        job_recovery_register(kind="mines", recover="webapp.training.services.recovery.mines_recover_silent")
        job_recovery_register(
            kind="evaluations", recover="webapp.training.services.recovery.evaluations_recover_stale"
        )
        if sys.argv[1:2] == ["db_worker"]:
            preload_trainer()


def preload_trainer() -> None:
    from django.conf import settings
    from django.utils.module_loading import import_string

    try:
        import_string(settings.GRIDACE_TRAINER)
        import_string(settings.GRIDACE_EVALUATOR)
    except ImportError:  # the task reports it on the run, with the run's context
        logger.exception("could not preload the trainer %s", settings.GRIDACE_TRAINER)
