"""Errors recorded on background jobs, whatever the job."""

from __future__ import annotations


class WorkerLost(Exception):
    """Recorded on a task whose worker stopped sending heartbeats (killed, machine lost)."""
