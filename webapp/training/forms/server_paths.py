"""Launch and mine settings that name a file or folder on the server: each is confined to the runs
and data folders, or to the finished mines the mines page lists (never any other path), and the
imitation start's mine must have been mined on the run's grid."""

from __future__ import annotations

from typing import Any

from django import forms

from ace_core.errors import ConfigError
from webapp.training.forms.launch_fields import AUTO_MINE
from webapp.training.selectors.mines import mine_by_path
from webapp.validation import InputError, confined_file, expert_spec, model_reference


def finished_mine(value: str, name: str) -> str:
    """``auto``, or the directory of a mine the mines page lists (never any other path)."""
    if value == AUTO_MINE or mine_by_path(path=value) is not None:
        return value
    raise InputError(
        f"{name}: not a finished mine listed here; accepted: no imitation start, auto, or a listed mine"
    )


def finished_mines(value: str, name: str) -> str:
    """Comma-separated directories of mines the mines page lists (never any other path)."""
    pieces = [piece.strip() for piece in value.split(",") if piece.strip()]
    for piece in pieces:
        if mine_by_path(path=piece) is None:
            raise InputError(
                f"{name}: {piece[:80]!r} is not a finished mine listed here; accepted: finished mines' "
                "directories (see the mines page), comma-separated, or empty for the pretrain mine"
            )
    return ",".join(pieces)


def confined_expert(value: str, name: str) -> str:
    """An expert spec whose mined action set (``actions=FILE``), if any, lies in the runs or data
    folder, named by its resolved path. Other mistakes are left to the spec's own check, which
    gives the accepted syntax."""
    from ace_core.config.expert import parse_expert_spec

    value = expert_spec(value, name)  # numbers as every number is read, the budget bounded
    kind, _, argument = value.strip().partition(":")
    try:
        actions = parse_expert_spec(argument).actions if kind == "greedy" else ""
    except ConfigError:
        return value
    if not actions:
        return value
    resolved = confined_file(actions, f"{name} actions")
    items = [
        f"actions={resolved}" if item.strip().startswith("actions=") else item for item in argument.split(",")
    ]
    return f"{kind}:{','.join(items)}"


PATH_FIELDS = {
    "action_subset": confined_file,
    "init_from": confined_file,
    "llm_model": model_reference,
    "pretrain_mine": finished_mine,
    "anchor_mine": finished_mines,
    "pretrain_expert": confined_expert,
}
"""fields that name a file or folder on the server: confined to the runs and data folders, or to
the finished mines listed on the mines page"""


def clean_paths(form: forms.BaseForm, cleaned: dict[str, Any]) -> None:
    for name, check in PATH_FIELDS.items():
        if cleaned.get(name):
            try:
                cleaned[name] = check(cleaned[name], name)
            except InputError as error:
                form.add_error(name, str(error))
    mine = mine_by_path(path=cleaned.get("pretrain_mine") or "")
    env = cleaned.get("env")
    if mine is not None and env and mine.env != env and "pretrain_mine" not in form.errors:
        form.add_error(
            "pretrain_mine",
            f"mine {mine.name} was mined on {mine.env}, not {env}; choose a mine of {env}, auto, or no imitation start",
        )
