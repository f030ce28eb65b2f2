"""``manage.py audit_verify``: walk the audit log's hash chain and name the first broken entry.

Exit status 0 when every entry links to the one before and matches its hash, 1 otherwise. The
chain's head hash is printed: kept elsewhere (a ticket, a log), it also shows later whether the
newest entries were removed, which the chain alone cannot.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS

from webapp.audit.selectors import audit_chain_check


class Command(BaseCommand):
    help = "Check the audit log's hash chain; exit status 1 and the first broken entry if it is broken."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="the database alias to check")

    def handle(self, *args: Any, database: str, **options: Any) -> None:
        report = audit_chain_check(using=database)
        if not report.intact:
            raise CommandError(
                f"audit chain broken at entry {report.broken_id}: {report.reason}; "
                f"the {report.checked} entries before it verify (head {report.head})",
                returncode=1,
            )
        self.stdout.write(f"audit chain intact: {report.checked} entries, head {report.head}")
