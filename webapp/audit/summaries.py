"""The audit page's words: one summary line per entry, and its details as rows of settings, never
a dump of the stored JSON.

An entry's ``before`` and ``after`` are flattened to dotted names (``guard.survival``) and shown
side by side, a value as text (a list joined by commas, nothing as "–"). A training config (the
``config`` of a ``run.launch``) is shown as its difference from the recipe it came from: the
recipe the launch recorded, else the recipe whose settings it equals, else the recipe of its grid
it differs least from, else the trainer's defaults; only the settings that differ are listed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ace_core.config import TrainConfig
from ace_core.training.recipes import RECIPES
from webapp.audit.models import AuditEntry

SUMMARY_CHANGES = 3
"""changed values the summary line names before "and N more\""""
COMMENT_IN_SUMMARY = 80
"""characters of the comment the summary line quotes"""
NOTHING = "–"

IGNORED_IN_DIFF = ("seed",)
"""settings a recipe does not fix (every run sets its own)"""


def value_text(value: Any) -> str:
    """A stored value in words: text as it is, numbers as written, nothing as "–", a list of
    plain values joined by commas, anything else as compact JSON."""
    if value is None or value == "":
        return NOTHING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value) if value else NOTHING
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted names: ``{"guard": {"ok": 1}}`` -> ``{"guard.ok": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


@dataclass(frozen=True)
class ConfigDiff:
    """A config against its recipe: the recipe's name (or "defaults") and the settings that differ
    as (setting, recipe's value, config's value)."""

    base: str
    exact: bool
    """True when the config is the recipe (seed aside)"""
    rows: list[tuple[str, str, str]]

    @property
    def words(self) -> str:
        if self.base == "defaults":
            start = "the trainer's defaults"
        else:
            start = f"recipe {self.base}"
        if not self.rows:
            return start
        names = [name for name, _, _ in self.rows]
        shown = ", ".join(names[:SUMMARY_CHANGES])
        more = f" and {len(names) - SUMMARY_CHANGES} more" if len(names) > SUMMARY_CHANGES else ""
        plural = "s" if len(names) > 1 else ""
        return f"{start} with {len(names)} changed setting{plural}: {shown}{more}"


def _differences(config: dict[str, Any], base: dict[str, Any]) -> list[tuple[str, str, str]]:
    names = [n for n in dict.fromkeys([*base, *config]) if n not in IGNORED_IN_DIFF]
    return [
        (name, value_text(base.get(name)), value_text(config.get(name)))
        for name in names
        if config.get(name) != base.get(name)
    ]


def config_diff(config: dict[str, Any]) -> ConfigDiff:
    """``config`` (a run's flat settings) as its difference from its recipe (module docstring)."""
    bases = [
        (recipe.name, _differences(config, recipe.values()))
        for recipe in RECIPES.values()
        if config.get("env") in recipe.envs
    ]
    # a recipe sets its first grid; a run of the recipe on another of its grids differs by env only
    bases = [(name, [row for row in rows if row[0] != "env"]) for name, rows in bases]
    if bases:
        name, rows = min(bases, key=lambda base: len(base[1]))
        return ConfigDiff(name, not rows, rows)
    rows = _differences(config, TrainConfig().to_dict())
    return ConfigDiff("defaults", not rows, rows)


def recipe_diff(config: dict[str, Any], recipe: str) -> ConfigDiff:
    """``config`` as its difference from the recipe it was launched from (its name recorded at
    launch); the grid counts only when the recipe does not offer the config's."""
    rows = _differences(config, RECIPES[recipe].values())
    if config.get("env") in RECIPES[recipe].envs:
        rows = [row for row in rows if row[0] != "env"]
    return ConfigDiff(recipe, not rows, rows)


@dataclass(frozen=True)
class EntryView:
    """An audit entry as the page shows it: a summary line, its values side by side, and its
    config against its recipe when it holds one."""

    entry: AuditEntry
    summary: str
    rows: list[tuple[str, str, str]]
    """(name, before, after) of every value the entry holds, config and empty values aside"""
    config: ConfigDiff | None


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What the entry changed, in short: ``status pending → approved`` for each value it holds
    before and after that differs; when none does, the plain values it records (``split test``)."""
    changed = [
        f"{name} {value_text(before[name])} → {value_text(value)}"
        for name, value in after.items()
        if name in before and before[name] != value
    ]
    if changed:
        return changed
    return [
        f"{name} {value_text(value)}"
        for name, value in after.items()
        if name not in before and value not in (None, "") and not isinstance(value, list)
    ]


def entry_view(entry: AuditEntry) -> EntryView:
    """The summary line and the details of one entry (module docstring)."""
    after = dict(entry.after or {})
    config = after.pop("config", None)
    recipe = after.pop("recipe", "") if isinstance(config, dict) else ""
    if not isinstance(config, dict):
        diff = None
    elif recipe in RECIPES:
        diff = recipe_diff(config, recipe)
    else:
        diff = config_diff(config)
    before, after = flatten(entry.before or {}), flatten(after)
    rows = [
        (name, value_text(before.get(name)), value_text(after.get(name)))
        for name in dict.fromkeys([*before, *after])
    ]
    rows = [row for row in rows if row[1:] != (NOTHING, NOTHING)]  # e.g. an empty label
    parts = [f"{entry.actor_name} · {entry.action} · {entry.target_repr}"]
    if diff is not None:
        parts.append(diff.words)
    changes = _changes(before, after)
    if changes:
        more = len(changes) - SUMMARY_CHANGES
        parts.append(", ".join(changes[:SUMMARY_CHANGES]) + (f" and {more} more" if more > 0 else ""))
    if entry.comment:
        comment = (
            entry.comment
            if len(entry.comment) <= COMMENT_IN_SUMMARY
            else entry.comment[:COMMENT_IN_SUMMARY] + "…"
        )
        parts.append(f"“{comment}”")
    return EntryView(entry=entry, summary=" · ".join(parts), rows=rows, config=diff)
