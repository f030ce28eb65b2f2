"""``manage.py security_log_prune``: drop security log rows beyond the retention
(``GRIDACE_SECURITY_LOG_MAX_ROWS`` newest rows, ``GRIDACE_SECURITY_LOG_DAYS`` days); the log also
prunes itself whenever it adds a row. Prints how many rows went and how many are kept."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from webapp.accounts.services import security_log_prune


class Command(BaseCommand):
    help = "Remove security log rows older or beyond the retention; print the counts."

    def handle(self, *args: Any, **options: Any) -> None:
        removed, kept = security_log_prune()
        self.stdout.write(f"security log: {removed} rows removed, {kept} kept")
