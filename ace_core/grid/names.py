"""One name per grid element, the same on every page: cards, alarms, N-1, the diagram, what-if,
the audit and the API.

A line is named by the substations it joins, origin first: ``line 1-4``; parallel lines between
the same two substations are told apart by their order, ``line 1-4 #2``. Substations, generators,
loads and storage units are named by kind and number: ``substation 4``, ``generator 0``,
``load 3``, ``storage 0``. grid2op's own names (``1_4_4``, ``sub_4``, ``gen_1_0``) are kept as
``raw`` for tooltips and for the settings that accept them (e.g. the N-1 contingency list).

A grid may carry readable names of its own (a control room's names for its lines and
substations): a JSON file ``<env name>.json`` in ``$GRIDACE_NAMES_DIR``, mapping a kind
(``lines``, ``substations``, ``generators``, ``loads``, ``storages``) to ``{"<id>": "name"}``.
Names it gives replace the defaults; the others keep them. A name must be unique among its kind.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ace_core.errors import ConfigError

KINDS = ("lines", "substations", "generators", "loads", "storages")
NAME_MAX_LENGTH = 60


@dataclass(frozen=True)
class ElementNames:
    """The display name of every element of one grid, by kind and id, and grid2op's raw names."""

    lines: tuple[str, ...]
    substations: tuple[str, ...]
    generators: tuple[str, ...]
    loads: tuple[str, ...]
    storages: tuple[str, ...] = ()
    raw_lines: tuple[str, ...] = ()

    def line(self, line: int | None) -> str:
        if line is None:
            return ""
        return self.lines[line] if 0 <= line < len(self.lines) else f"line {line}"

    def substation(self, sub: int) -> str:
        return self.substations[sub] if 0 <= sub < len(self.substations) else f"substation {sub}"

    def lines_of(self, lines) -> str:
        """Several lines in words: ``line 1-4, line 3-4``."""
        return ", ".join(self.line(int(i)) for i in lines)


def default_names(
    line_or_sub, line_ex_sub, n_sub: int, n_gen: int, n_load: int, n_storage: int = 0
) -> ElementNames:
    """The grid's own names: lines by the substations they join (``#2`` for a parallel line)."""
    ends = [(int(o), int(e)) for o, e in zip(line_or_sub, line_ex_sub)]
    seen: Counter = Counter()
    lines = []
    for origin, extremity in ends:
        seen[(origin, extremity)] += 1
        count = seen[(origin, extremity)]
        lines.append(f"line {origin}-{extremity}" + (f" #{count}" if count > 1 else ""))
    return ElementNames(
        lines=tuple(lines),
        substations=tuple(f"substation {s}" for s in range(n_sub)),
        generators=tuple(f"generator {g}" for g in range(n_gen)),
        loads=tuple(f"load {c}" for c in range(n_load)),
        storages=tuple(f"storage {s}" for s in range(n_storage)),
    )


def element_names(env, env_name: str = "") -> ElementNames:
    """The names of ``env``'s elements: its readable names file's where it has one, the grid's
    own otherwise (module docstring)."""
    names = default_names(
        env.line_or_to_subid,
        env.line_ex_to_subid,
        int(env.n_sub),
        int(env.n_gen),
        int(env.n_load),
        int(getattr(env, "n_storage", 0)),
    )
    names = _with_raw(names, [str(n) for n in env.name_line])
    folder = os.environ.get("GRIDACE_NAMES_DIR")
    if folder and env_name and (Path(folder) / f"{env_name}.json").is_file():
        names = readable_names(names, Path(folder) / f"{env_name}.json")
    return names


def _with_raw(names: ElementNames, raw_lines: list[str]) -> ElementNames:
    return ElementNames(**{**names.__dict__, "raw_lines": tuple(raw_lines)})


def readable_names(names: ElementNames, path: Path) -> ElementNames:
    """``names`` with those of the JSON file at ``path``; a clear error naming the file and the
    entry for anything else than the accepted kinds, ids in range and short unique names."""
    try:
        given = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"element names file {path.name}: not readable JSON ({exc})") from None
    if not isinstance(given, dict) or set(given) - set(KINDS):
        raise ConfigError(
            f"element names file {path.name}: an object of kinds expected; accepted kinds: {', '.join(KINDS)}"
        )
    updated = {}
    for kind, mapping in given.items():
        current = list(getattr(names, kind))
        if not isinstance(mapping, dict):
            raise ConfigError(f"element names file {path.name}: {kind} must map ids to names")
        for key, name in mapping.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit() and int(key) < len(current)):
                raise ConfigError(
                    f"element names file {path.name}: {kind} id {key!r} does not exist; "
                    f"accepted: 0 to {len(current) - 1}"
                )
            if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_LENGTH:
                raise ConfigError(
                    f"element names file {path.name}: {kind} {key} needs a name of 1 to "
                    f"{NAME_MAX_LENGTH} characters"
                )
            current[int(key)] = name.strip()
        doubles = [n for n, c in Counter(current).items() if c > 1]
        if doubles:
            raise ConfigError(f"element names file {path.name}: {kind} named twice: {', '.join(doubles)}")
        updated[kind] = tuple(current)
    return ElementNames(**{**names.__dict__, **updated})
