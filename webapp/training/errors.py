"""Errors the training services raise; each message says what was wrong and what is accepted."""

from django.core.exceptions import ValidationError


class RunStateError(ValidationError):
    """The run (or checkpoint, or evaluation) is not in a state that allows the action."""


class WorkerLost(Exception):
    """Recorded on a task whose worker stopped sending heartbeats (killed, machine lost)."""


class MineStateError(ValidationError):
    """A mine that cannot be started now: the same mine is already being mined, or is finished."""
