"""A generated week's fingerprint, to tell whether two machines made the same days.

The same seed and week should give the same data everywhere; when two machines' policies differ,
comparing their weeks' digests says whether the days are the cause. The digest is over each
file's name and decompressed content (so a different bz2 build that compresses the same values
otherwise gives the same digest), files in name order; :func:`file_digests` gives them one by one,
to find which series differ. chronix2grid's report on the week (``generation_quality.json``) is
left out: it holds how long the generation took, so two makings of the same days never agree on
it, and nothing GridACE plays reads it.
"""

from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

GENERATION_REPORTS = frozenset({"generation_quality.json"})
"""files beside a week that describe its making, not its days (wall-clock times among them)"""


def file_digests(week: Path) -> dict[str, str]:
    """SHA-256 of each file of ``week`` (decompressed when ``.bz2``), by path relative to it; the
    generator's report is left out."""
    out = {}
    for path in sorted(p for p in week.rglob("*") if p.is_file() and p.name not in GENERATION_REPORTS):
        data = path.read_bytes()
        if path.suffix == ".bz2":
            data = bz2.decompress(data)
        out[path.relative_to(week).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def week_digest(week: Path) -> str:
    """One SHA-256 over :func:`file_digests` (names and contents), its first 16 hex digits."""
    whole = hashlib.sha256()
    for name, digest in file_digests(week).items():
        whole.update(f"{name}\0{digest}\n".encode())
    return whole.hexdigest()[:16]
