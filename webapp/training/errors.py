"""Errors the training services raise; each message says what was wrong and what is accepted."""

from django.core.exceptions import ValidationError

from webapp.jobs import errors as jobs_errors


class RunStateError(ValidationError):
    """The run (or checkpoint, or evaluation) is not in a state that allows the action."""


class DeployGuardError(RunStateError):
    """A deploy the guard refuses: no finished test evaluation showing the policy at least at
    do-nothing's survival, and no override with a written reason. The message names what is
    missing."""


class WorkerLost(jobs_errors.WorkerLost):
    """Recorded on a run's or a mine's task whose worker stopped sending heartbeats (killed, machine
    lost); kept under this name, which the task rows already recorded carry."""


class MineStateError(ValidationError):
    """A mine that cannot be started now: the same mine is already being mined, or is finished."""
