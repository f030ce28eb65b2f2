"""Errors the review services raise; each message says what was wrong and what is accepted."""

from django.core.exceptions import ValidationError


class DecisionError(ValidationError):
    """A decision on a refinement that cannot be taken (already decided, wrong run, bad comment)."""
