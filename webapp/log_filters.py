"""Logging filters of the settings' ``LOGGING``.

Django logs every refused request (403 for a missing permission, 400 for a bad host or an
oversized body) with the exception's traceback; daphne sends those records to the console, so a
probe filled the demo's log with tracebacks of requests that were answered exactly as intended.
"""

from __future__ import annotations

import logging


class OneLineClientErrors(logging.Filter):
    """Drop the traceback of records about answers below 500 (a client's mistake, not ours);
    server errors keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
