"""The audit log's hash chain: each entry holds the hash of the one before, so an edited, removed
or reordered row breaks every hash after it.

``entry_hash = sha256(prev_hash + canonical JSON of the entry)``, the first entry's ``prev_hash``
being :data:`GENESIS`. The canonical JSON is the entry's fields (not its id, which the database
gives only on insert) with sorted keys and no spaces. ``before``/``after`` are read back from the
database in a form that can differ from what was written (Postgres' jsonb prints ``1e+20`` as
``100000000000000000000``), so floats holding a whole number count as that integer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Protocol

GENESIS = "0" * 64
"""the ``prev_hash`` of the first entry"""


class Chained(Protocol):
    """What the chain reads of an entry (the model, or a migration's historical model)."""

    at: Any
    actor_id: int | None
    actor_name: str
    action: str
    target_type: str
    target_id: str
    target_repr: str
    before: Any
    after: Any
    comment: str
    prev_hash: str
    entry_hash: str


def _plain(value: Any) -> Any:
    """JSON as the database gives it back: dict keys are text, whole floats are integers."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def canonical_json(entry: Chained) -> str:
    payload = {
        "at": entry.at.astimezone(UTC).isoformat(timespec="microseconds"),
        "actor_id": entry.actor_id,
        "actor_name": entry.actor_name,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "target_repr": entry.target_repr,
        "before": _plain(entry.before),
        "after": _plain(entry.after),
        "comment": entry.comment,
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_digest(prev_hash: str, entry: Chained) -> str:
    """The hash ``entry`` must hold when it follows an entry whose hash is ``prev_hash``."""
    return hashlib.sha256((prev_hash + canonical_json(entry)).encode()).hexdigest()


def seal(entry: Chained, prev_hash: str) -> None:
    """Fill in ``entry``'s link to the entry before it and its own hash (before it is saved)."""
    entry.prev_hash = prev_hash
    entry.entry_hash = entry_digest(prev_hash, entry)


@dataclass(frozen=True)
class ChainReport:
    """The outcome of walking the chain: how many entries held, and the first that did not."""

    checked: int
    head: str
    """the last good entry's hash (keep it elsewhere to notice the newest entries being removed)"""
    broken_id: int | None = None
    reason: str = ""

    @property
    def intact(self) -> bool:
        return self.broken_id is None


def walk(entries: Any) -> ChainReport:
    """Check entries given oldest first (by id): each must link to the one before and hash right."""
    expected_prev, checked = GENESIS, 0
    for entry in entries:
        if entry.prev_hash != expected_prev:
            reason = "its prev_hash does not match the entry before it (one was removed, inserted or edited)"
            return ChainReport(checked, expected_prev, entry.pk, reason)
        if entry.entry_hash != entry_digest(entry.prev_hash, entry):
            return ChainReport(
                checked, expected_prev, entry.pk, "its content does not match its hash (edited)"
            )
        expected_prev, checked = entry.entry_hash, checked + 1
    return ChainReport(checked, expected_prev)
