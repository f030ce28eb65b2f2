"""Errors the operations services raise; views turn them into 400 answers with the message."""

from __future__ import annotations


class OperationsError(Exception):
    """A request the live console cannot honour; the message says what was wrong and what is accepted."""


class StaleStepError(OperationsError):
    """A decision about a step the grid has already left."""


class DecisionConflictError(OperationsError):
    """Another decision already holds the step (e.g. a second operator accepted at the same time)."""


class LostOwnershipError(OperationsError):
    """The feed worker no longer owns the session (another worker took it over)."""
