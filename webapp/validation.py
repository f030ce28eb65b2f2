"""What browsers and API clients send, checked in one place before it reaches a service.

* JSON bodies: size, nesting depth, numbers (no 5,000-digit integers, no NaN or infinities), and
  a JSON object at the top.
* Fields of a JSON body, typed strictly (a string is not a number, ``true`` is not an integer)
  and bounded (never more than a database integer holds).
* Live actions (``{"kind": ..., ...}``, with an optional continuous ``move``): the same strict
  types on each part; the grid's own checks (which line, which substation, which unit and its
  limits) stay in :func:`ace_core.live.parse_action` and the legality rules.
* Numbers in ASCII digits only (``int("١٢")`` and ``int("１２")`` are 12 in Python), without
  surrounding whitespace, a leading ``+`` or a negative zero (``-0`` would be stored as -0.0), in
  form fields, JSON bodies, query ids and the numbers of an expert spec (``greedy:64``, whose
  budget is bounded), with the accepted range in every error.
* Paths a user may name, confined to the runs and data folders; refusals name the folders, never
  their place on the server.

Every refusal is an :class:`InputError` whose message names the field and what is accepted.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

DB_INT_MAX = 2**31 - 1
"""the largest value an integer column holds on every supported database"""
MAX_BODY_BYTES = 64 * 1024
MAX_DEPTH = 16
MAX_NUMBER_CHARS = 40
"""JSON numbers longer than this are refused before Python converts them"""
MAX_ACTION_PAIRS = 64
MAX_EXPERT_BUDGET = 100_000
"""the most candidates an expert may simulate per step (its default is 3,000)"""

# ASCII digits, an optional minus, nothing around (``fullmatch`` refuses a trailing newline too)
ASCII_INTEGER = re.compile(r"-?[0-9]+")
ASCII_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NUMBER_RULES = "digits 0-9, without spaces, a + sign or -0"


class InputError(ValueError):
    """Refused input; the message names the field and what is accepted."""


# ----- JSON bodies ---------------------------------------------------------------------------
def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects, without recursing (``[`` x 100,000 is fine)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def negative_zero(text: str, value: float) -> bool:
    return text.startswith("-") and value == 0


def _json_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise InputError(f"a number of {len(text)} digits is refused; accepted: at most {MAX_NUMBER_CHARS}")
    if negative_zero(text, int(text)):
        raise InputError(f"{text} is refused; accepted: 0")
    return int(text)


def _json_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise InputError(
            f"a number of {len(text)} characters is refused; accepted: at most {MAX_NUMBER_CHARS}"
        )
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"{text} is too large; accepted: finite numbers")
    if negative_zero(text, value):
        raise InputError(f"{text} is refused; accepted: 0")
    return value


def _json_constant(name: str) -> None:
    raise InputError(f"{name} is not a JSON number; accepted: finite numbers")


def json_object(body: bytes) -> dict[str, Any]:
    """The JSON object of a request body (an empty body is ``{}``)."""
    if len(body) > MAX_BODY_BYTES:
        raise InputError(f"the request body has {len(body)} bytes; accepted: at most {MAX_BODY_BYTES}")
    try:
        text = (body or b"{}").decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the request body is not UTF-8 text; send a JSON object") from None
    if _depth(text) > MAX_DEPTH:
        raise InputError(f"the request body is nested too deeply; accepted: at most {MAX_DEPTH} levels")
    try:
        data = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant)
    except (json.JSONDecodeError, RecursionError):
        raise InputError("the request body is not JSON; send a JSON object") from None
    if not isinstance(data, dict):
        raise InputError(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


# ----- fields of a JSON object -----------------------------------------------------------------
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer(value: Any, name: str, *, low: int = 0, high: int = DB_INT_MAX) -> int:
    """A JSON integer from ``low`` to ``high`` (``"3"``, ``3.0`` and ``true`` are refused)."""
    if not _is_int(value) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high} (got {_shown(value)})")
    return value


def number(value: Any, name: str, *, low: float, high: float) -> float:
    """A JSON number (integer or decimal) from ``low`` to ``high``."""
    if not (_is_int(value) or isinstance(value, float)) or not low <= value <= high:
        raise InputError(f"{name} must be a number from {low} to {high} (got {_shown(value)})")
    return float(value)


def text(value: Any, name: str, *, max_length: int) -> str:
    """A JSON string of at most ``max_length`` characters, without NUL (no database text holds it)."""
    if not isinstance(value, str) or len(value) > max_length or "\x00" in value:
        raise InputError(
            f"{name} must be text of at most {max_length} characters, without NUL (got {_shown(value)})"
        )
    return value


def _shown(value: Any) -> str:
    shown = json.dumps(value) if not isinstance(value, str) else repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def live_action(value: Any, name: str = "action") -> dict[str, Any]:
    """An action's parts with strict types; the grid checks the rest (which line, substation)."""
    if not isinstance(value, dict):
        raise InputError(f"{name} must be a JSON object with a 'kind' (got {_shown(value)})")
    checked: dict[str, Any] = {"kind": text(value.get("kind"), f"{name}.kind", max_length=20)}
    for part in ("index", "line", "substation"):
        if part in value:
            checked[part] = integer(value[part], f"{name}.{part}")
    if "status" in value:
        checked["status"] = text(value["status"], f"{name}.status", max_length=20)
    if "set" in value:
        pairs = value["set"]
        if not isinstance(pairs, list) or len(pairs) > MAX_ACTION_PAIRS:
            raise InputError(f"{name}.set must be a list of at most {MAX_ACTION_PAIRS} [element, bus] pairs")
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise InputError(f"{name}.set: {_shown(pair)} is not an [element, bus] pair")
            integer(pair[0], f"{name}.set element")
            integer(pair[1], f"{name}.set bus", low=1, high=2)
        checked["set"] = pairs
    if "actions" in value:  # a pair: two single actions played together, each checked the same way
        actions = value["actions"]
        if not isinstance(actions, list) or len(actions) != 2:
            raise InputError(f"{name}.actions must be a list of two actions (a pair)")
        checked["actions"] = []
        for i, part in enumerate(actions):
            if isinstance(part, dict) and "actions" in part:
                raise InputError(
                    f"{name}.actions[{i}] is a pair inside a pair; a pair holds two single actions"
                )
            checked["actions"].append(live_action(part, f"{name}.actions[{i}]"))
    if value.get("move") is not None:
        checked["move"] = live_move(value["move"], f"{name}.move")
    return checked


MOVE_PARTS = ("redispatch", "curtail", "storage")
MAX_MOVE_MW = 100_000.0
"""the largest setpoint a continuous move may name (the grid's own limits are far below)"""


def live_move(value: Any, name: str = "move") -> dict[str, Any]:
    """A continuous move's setpoints with strict types (``{"redispatch": [[gen, MW], ...],
    "curtail": [...], "storage": [...]}``); the grid checks the units and their limits."""
    if not isinstance(value, dict):
        raise InputError(
            f"{name} must be a JSON object with any of {', '.join(MOVE_PARTS)} (got {_shown(value)})"
        )
    unknown = sorted(set(value) - set(MOVE_PARTS))
    if unknown:
        raise InputError(f"{name}: unknown part(s) {', '.join(unknown)}; accepted: {', '.join(MOVE_PARTS)}")
    checked: dict[str, Any] = {}
    for part, rows in value.items():
        if not isinstance(rows, list) or len(rows) > MAX_ACTION_PAIRS:
            raise InputError(f"{name}.{part} must be a list of at most {MAX_ACTION_PAIRS} [unit, MW] pairs")
        for row in rows:
            if not isinstance(row, list) or len(row) != 2:
                raise InputError(f"{name}.{part}: {_shown(row)} is not a [unit, MW] pair")
            integer(row[0], f"{name}.{part} unit")
            number(row[1], f"{name}.{part} MW", low=-MAX_MOVE_MW, high=MAX_MOVE_MW)
        checked[part] = rows
    return checked


def query_id(value: str) -> int | None:
    """An id from a query string (ASCII digits, at most what a database integer holds), else None."""
    if len(value) > 10 or not ASCII_INTEGER.fullmatch(value) or value[0] == "-":
        return None
    number = int(value)
    return number if number <= DB_INT_MAX else None


def _spec_number(key: str, raw: str, name: str) -> None:
    if len(raw) > MAX_NUMBER_CHARS or not ASCII_NUMBER.fullmatch(raw) or negative_zero(raw, float(raw)):
        raise InputError(f"{name}: {key}={raw[:40]!r} is refused; accepted: numbers in {NUMBER_RULES}")
    if ASCII_INTEGER.fullmatch(raw) and int(raw) > MAX_EXPERT_BUDGET:
        raise InputError(f"{name}: {key}={raw} is too large; accepted: at most {MAX_EXPERT_BUDGET}")


def expert_spec(value: str, name: str = "expert") -> str:
    """The numbers of a ``greedy:BUDGET`` or ``greedy:key=value,...`` expert spec, checked as
    every number is (ASCII digits, no spaces, no ``+``, no ``-0``) and bounded: the budget to
    :data:`MAX_EXPERT_BUDGET`. The spec's own parser (in ace_core) checks the rest."""
    kind, _, argument = value.partition(":")
    if kind.strip() != "greedy" or not argument:
        return value
    items = [f"budget={argument}"] if "=" not in argument and "," not in argument else argument.split(",")
    for item in items:
        key, _, raw = item.partition("=")
        if key.strip() in {"actions", ""} or not raw or not any(char.isdigit() for char in raw):
            continue  # not a number: the parser names what it expects
        _spec_number(key.strip(), raw, name)
    return value


# ----- form fields -------------------------------------------------------------------------------
class AsciiIntegerField(forms.IntegerField):
    """Whole numbers in ASCII digits (no surrounding spaces, ``+`` or ``-0``), bounded (by default to what a database integer holds); every
    error says what is accepted. ``accepted`` replaces the range in messages when the real range
    is checked later (e.g. by :meth:`ace_core.config.TrainConfig.validate`)."""

    def __init__(
        self, *, min_value: int = 0, max_value: int = DB_INT_MAX, accepted: str = "", **kwargs: Any
    ) -> None:
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)
        message = (
            f"Enter a whole number in digits 0-9; accepted: {accepted or f'{min_value} to {max_value}'}."
        )
        self.error_messages.update(invalid=message, min_value=message, max_value=message)

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        text = str(value)
        if len(text) > 20 or not ASCII_INTEGER.fullmatch(text) or negative_zero(text, int(text)):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return int(text)


class AsciiFloatField(forms.FloatField):
    """Finite decimal numbers in ASCII digits (no surrounding spaces, ``+`` or ``-0``), bounded;
    every error says what is accepted."""

    def __init__(
        self, *, min_value: float = -1e15, max_value: float = 1e15, accepted: str = "", **kwargs: Any
    ) -> None:
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)
        message = (
            f"Enter a number in digits 0-9 (e.g. 0.5); accepted: {accepted or f'{min_value} to {max_value}'}."
        )
        self.error_messages.update(invalid=message, min_value=message, max_value=message)

    def to_python(self, value: Any) -> float | None:
        if value in self.empty_values:
            return None
        text = str(value)
        if len(text) > MAX_NUMBER_CHARS or not ASCII_NUMBER.fullmatch(text):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        number = float(text)
        if not math.isfinite(number) or negative_zero(text, number):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return number

    def validate(self, value: Any) -> None:
        forms.Field.validate(self, value)  # FloatField's own check says only "Enter a number."


# ----- paths -------------------------------------------------------------------------------------
def allowed_roots() -> list[Path]:
    """Folders a user may name files in: the runs folder and the data folder."""
    return [Path(settings.GRIDACE_RUNS_DIR).resolve(), Path(settings.GRIDACE_DATA_DIR).resolve()]


def shown_path(value: str) -> str:
    """A path as messages show it: relative to the data or runs folder it lies in (as the user
    would name it), else as the user wrote it; never the server's own folders."""
    path = Path(value)
    for root in allowed_roots():
        if path.is_absolute() and path.is_relative_to(root):
            return str(path.relative_to(root))
    return value


def confined_file(value: str, name: str) -> str:
    """The resolved path of a file inside the runs or data folder. A relative path is read from
    the data folder. The one refusal is the same whether or not a path outside exists."""
    roots = allowed_roots()
    refusal = InputError(f"{name} must name a file inside the data folder or the runs folder")
    if "\x00" in value:
        raise refusal
    path = Path(value)
    resolved = (path if path.is_absolute() else roots[1] / path).resolve()
    if not any(resolved.is_relative_to(root) for root in roots):
        raise refusal
    if not resolved.is_file():
        raise InputError(f"{name}: {shown_path(value)!r} is not a file in the data folder or the runs folder")
    return str(resolved)


HF_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def model_reference(value: str, name: str) -> str:
    """A model a user names: a hub-style id (``org/name``, read from the local cache) or a model
    folder inside the runs or data folder; any other path is refused without saying whether it
    exists."""
    if not value or (HF_MODEL_ID.fullmatch(value) and ".." not in value):
        return value
    roots = allowed_roots()
    resolved = Path(value).resolve() if Path(value).is_absolute() else (roots[1] / value).resolve()
    if "\x00" in value or not any(resolved.is_relative_to(root) for root in roots):
        raise InputError(
            f"{name} must be a model id such as org/name or a folder inside the data folder or the runs folder"
        )
    return str(resolved)
