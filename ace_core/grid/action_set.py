"""Mined action sets on disk: topology actions with how often an expert played them.

An action set is a JSON file ``{"env", "fingerprint", "actions": [[index, count], ...],
"decisions", "coverage"}`` written atomically. Its fingerprint (the action space's, see
:meth:`ActionSpace.fingerprint`) makes a set mined on one grid unusable on another: loading it
against a different space fails with a one-line error.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ace_core.errors import ConfigError
from ace_core.grid.action_space import ActionSpace

COVERAGE_SIZES = (10, 25, 50, 100, 200, 500)


class ActionSetError(ConfigError):
    """An action set file that is missing, corrupt or made on another grid."""


def write_json_atomic(data: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as tmp:
        json.dump(data, tmp, indent=1)
    os.replace(tmp.name, path)
    return path


def save_action_set(space: ActionSpace, counts: list[tuple[int, int]], decisions: int, path: Path) -> dict:
    """Write ``counts`` (index, times played), most frequent first, with coverage figures: the share
    of the expert's ``decisions`` that the top-N actions cover."""
    counts = sorted(counts, key=lambda pair: (-pair[1], pair[0]))
    coverage = {}
    for top in COVERAGE_SIZES:
        covered = sum(c for _, c in counts[:top])
        coverage[str(top)] = covered / decisions if decisions else 0.0
    data = {
        "env": space.env_name,
        "fingerprint": space.fingerprint(),
        "actions": [[int(i), int(c)] for i, c in counts],
        "decisions": int(decisions),
        "coverage": coverage,
    }
    write_json_atomic(data, path)
    return data


def load_action_set(path, space: ActionSpace, top: int | None = None) -> list[int]:
    """Topology action indices of a set, most frequent first (the first ``top`` of them)."""
    path = Path(path)
    if not path.is_file():
        raise ActionSetError(f"no action set at {path}; give the action_set.json a mine wrote")
    try:
        data = json.loads(path.read_text())
        indices = [int(pair[0]) for pair in data["actions"]]
        fingerprint = data["fingerprint"]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ActionSetError(
            f"{path} is not an action set written by `python -m ace_core mine` ({exc})"
        ) from exc
    if fingerprint != space.fingerprint():
        raise ActionSetError(
            f"action set {path} was mined on {fingerprint!r}, but this env's action space is "
            f"{space.fingerprint()!r}: use a set mined on the same env"
        )
    if any(not space.first_topology <= i < space.n for i in indices):
        raise ActionSetError(f"{path} lists indices outside this env's topology actions")
    return indices[:top]
