"""Errors the operations services raise; views turn them into 400 answers with the message."""

from __future__ import annotations


class OperationsError(Exception):
    """A request the live console cannot honour; the message says what was wrong and what is accepted,
    ``field`` names the input at fault (None: no single one)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class SessionStateError(OperationsError):
    """The session (or the deployment it needs) is not in a state that allows the action: a stopped
    session asked to pause, a single step of a running one, a start with no policy deployed."""


class UnknownObjectError(OperationsError):
    """The request names something the session does not have (e.g. an alarm of another session)."""


class StaleStepError(OperationsError):
    """A decision about a step the grid has already left."""


class DecisionConflictError(OperationsError):
    """Another decision already holds the step (e.g. a second operator accepted at the same time)."""


class LostOwnershipError(OperationsError):
    """The feed worker no longer owns the session (another worker took it over)."""
