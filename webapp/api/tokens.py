"""The form of a token and its hash, shared by the code that creates tokens (services) and the
code that recognises them (selectors)."""

from __future__ import annotations

import hashlib
import re

TOKEN_KIND = "gat"
TOKEN_PATTERN = re.compile(rf"^{TOKEN_KIND}_([0-9a-f]{{8}})_[A-Za-z0-9_-]{{43}}$")
TOKEN_SHAPE = f"{TOKEN_KIND}_<8 hex digits>_<43 characters>"


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()
