"""Accepted values and the range checks every config uses; errors name the field first."""

from __future__ import annotations

import ast
import inspect

from ace_core.errors import ConfigError

HEADS = ("auto", "flat", "factorised")
LLM_BACKENDS = ("none", "local", "openai", "random")
TRAJECTORY_SELECTIONS = ("reward", "state", "action")
CRITIC_FORMATS = ("choice", "json")
ACTOR_ANSWERS = ("letter", "text")
ACTOR_SELECTIONS = ("worst", "random")
MOVE_LABELS = ("all", "alone")
"""which decisions where the expert played a continuous move a policy with moves learns it at: all
of them, or those where it played the move alone (no topology action with it)"""
VALIDATION_DECIDES = ("mean", "attacks", "uneven")
"""which survival chooses best.pt: the mean over every copy of the validation days, the attacked
copy's, or the uneven copies' mean"""
MAX_STEPS = 100_000_000
MAX_LABELS = 26
"""options an LLM can be offered at once: one letter each"""


def in_range(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not (low <= value <= high):
        raise ConfigError(f"{name}={value!r} is out of range; accepted: {low} to {high}")


def one_of(name: str, value: str, accepted: tuple[str, ...]) -> None:
    if value not in accepted:
        raise ConfigError(f"{name}={value!r} is not accepted; choose one of: {', '.join(accepted)}")


def class_field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of dataclass ``cls``, read from its source."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs
