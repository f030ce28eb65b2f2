"""The flat settings of a config with sections: one name per setting, for flags, forms and records.

A config's own fields are flat settings under their names; a section's fields are flat settings
under the name their metadata carries (:func:`~ace_core.config.sections.flat`), and the others are
settings of the code, reached through their section only. :func:`flat_fields` lists them in the
config's order with their type, default, docstring and group; :func:`typed` and
:func:`section_from_dict` read values back from a dict (a checkpoint's, a form's, a record's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ace_core.config.checks import class_field_docs
from ace_core.config.sections import GROUPS, TRAINING
from ace_core.errors import ConfigError


@dataclass(frozen=True)
class ConfigField:
    """One flat setting: its name (flag, form field, key), type, default and docstring."""

    name: str
    type: type
    default: Any
    doc: str
    section: str
    """the TrainConfig section holding it ("" for TrainConfig's own)"""
    attribute: str
    """its name in that section"""
    group: str = TRAINING
    """the title it is shown under (its section's, unless its field names another)"""


def flat_fields(config_class: type, sections: Mapping[str, type]) -> dict[str, ConfigField]:
    """Every flat setting of ``config_class`` by name, in its order (each section's where it is
    declared); ``sections``: the fields that hold a section -> the section's dataclass."""
    out: dict[str, ConfigField] = {}
    own_docs = class_field_docs(config_class)
    for f in dataclasses.fields(config_class):
        if f.name not in sections:
            group = f.metadata.get("group", TRAINING)
            doc = own_docs.get(f.name, "")
            out[f.name] = ConfigField(f.name, type(f.default), f.default, doc, "", f.name, group)
            continue
        kind = sections[f.name]
        docs, defaults = class_field_docs(kind), kind()
        for g in dataclasses.fields(kind):
            if "flat" in g.metadata:
                default, name = getattr(defaults, g.name), g.metadata["flat"]
                group = g.metadata.get("group", kind.title)
                doc = docs.get(g.name, "")
                out[name] = ConfigField(name, type(default), default, doc, f.name, g.name, group)
    unknown = {field.group for field in out.values()} - set(GROUPS)
    if unknown:
        raise ValueError(f"groups {sorted(unknown)} are not in ace_core.config.sections.GROUPS")
    return out


def typed(name: str, value: Any, expected: type) -> Any:
    """``value`` as a setting of type ``expected`` (an int for a float, a list for a tuple), or
    ConfigError naming the setting."""
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if expected is tuple and isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{name} must be {expected.__name__}, got {value!r}")
    return value


def section_from_dict(name: str, kind: type, data: Any) -> Any:
    """The section ``kind`` (held by the field ``name``) from a dict of its settings; settings the
    dict lacks keep their defaults, unknown ones are refused."""
    if not isinstance(data, dict):
        raise ConfigError(f"{name} must be a dict of {kind.__name__} settings, got {data!r}")
    defaults = kind()
    known = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown {name} settings {unknown}; accepted: {known}")
    return kind(**{k: typed(f"{name}.{k}", v, type(getattr(defaults, k))) for k, v in data.items()})
