"""Reading the audit log: filtered lists for the page, rows for the CSV export (with each
entry's hashes) and the check of the hash chain."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator

from django.db import DEFAULT_DB_ALIAS
from django.db.models import QuerySet

from webapp.audit.chain import ChainReport, walk
from webapp.audit.models import AuditEntry

CSV_HEADER = [
    "at",
    "actor",
    "action",
    "target_type",
    "target_id",
    "target",
    "before",
    "after",
    "comment",
    "id",
    "prev_hash",
    "entry_hash",
]


def audit_entry_list(
    *, action: str = "", actor: str = "", target_type: str = "", target_id: str = ""
) -> QuerySet[AuditEntry]:
    if any("\x00" in value for value in (action, actor, target_type, target_id)):
        return AuditEntry.objects.none()  # no stored value holds NUL (and Postgres refuses it in a query)
    entries = AuditEntry.objects.all()
    if action:
        entries = entries.filter(action=action)
    if actor:
        entries = entries.filter(actor_name=actor)
    if target_type:
        entries = entries.filter(target_type=target_type)
    if target_id:
        entries = entries.filter(target_id=target_id)
    return entries


def audit_actions() -> list[str]:
    return list(AuditEntry.objects.order_by("action").values_list("action", flat=True).distinct())


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"


def _csv_safe(text: str) -> str:
    """Defuse spreadsheet formulas: a cell whose first visible character starts a formula is
    prefixed with a quote. Spreadsheets skip leading spaces and read full-width and other
    compatibility forms (＝, ﹢) as the plain sign, so those count too."""
    if text[:1] in FORMULA_STARTS:
        return "'" + text
    visible = text.lstrip().lstrip(INVISIBLE).lstrip()
    if visible and unicodedata.normalize("NFKC", visible[0])[:1] in FORMULA_STARTS:
        return "'" + text
    return text


def audit_csv_rows(entries: QuerySet[AuditEntry]) -> Iterator[list[str]]:
    """The header, then one row per entry (oldest first), before/after as JSON."""
    yield CSV_HEADER
    for entry in entries.order_by("at", "id").iterator(chunk_size=500):
        yield [
            entry.at.isoformat(),
            _csv_safe(entry.actor_name),
            entry.action,
            entry.target_type,
            entry.target_id,
            _csv_safe(entry.target_repr),
            json.dumps(entry.before, sort_keys=True),
            json.dumps(entry.after, sort_keys=True),
            _csv_safe(entry.comment),
            str(entry.pk),
            entry.prev_hash,
            entry.entry_hash,
        ]


def audit_chain_check(*, using: str = DEFAULT_DB_ALIAS) -> ChainReport:
    """Walk the whole log oldest first (by id): the first entry that does not link to the one
    before or does not match its hash, if any. ``using``: another database, e.g. a restored copy."""
    return walk(AuditEntry.objects.using(using).order_by("id").iterator(chunk_size=1000))
