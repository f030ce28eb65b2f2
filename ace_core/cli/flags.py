"""Flags generated from dataclasses, so that a setting is declared once: TrainConfig's flat settings
(``train``, ``experiment ablations``) and the fields of a command's own dataclass (``mine``'s
MineSpec, ``pretrain`` and ``dagger``'s CloneConfig); and the parser pieces the commands share.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ace_core.config import TrainConfig, config_fields
from ace_core.config.checks import class_field_docs
from ace_core.errors import ConfigError
from ace_core.workers import Workers

SPLITS = ("train", "validation", "test")


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends each argument's default, except to required ones and where the help already names
    it (the config flags, whose argparse default is None so that only the flags given override
    the config), and to flags without a default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default is None or "(default: " in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class CommandParser(argparse.ArgumentParser):
    """A parser whose flags may be added on first use (``add_flags``): a command whose flags come
    from a dataclass in a module that imports torch or grid2op (seconds) adds them only when it
    is parsed or its help is shown, so the other commands never pay for that import."""

    def __init__(
        self, *args: Any, add_flags: Callable[[argparse.ArgumentParser], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._add_flags = add_flags

    def _with_flags(self) -> None:
        if self._add_flags is not None:
            add_flags, self._add_flags = self._add_flags, None
            add_flags(self)

    def parse_known_args(self, args=None, namespace=None):
        self._with_flags()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._with_flags()
        return super().format_usage()

    def format_help(self) -> str:
        self._with_flags()
        return super().format_help()


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per flat setting of TrainConfig; each defaults to None, so that only the flags given
    override the config (or the recipe)."""
    for f in config_fields():
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{f.doc} (default: {f.default})".replace("%", "%%")
        if f.type is bool:
            parser.add_argument(
                flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        else:
            parser.add_argument(flag, dest=f.name, type=f.type, default=None, help=help_text)


def config_from(args: argparse.Namespace) -> TrainConfig:
    """The flags given, over the recipe named by ``--recipe`` if any, over TrainConfig's defaults."""
    values = {f.name: getattr(args, f.name) for f in config_fields()}
    explicit = {k: v for k, v in values.items() if v is not None}
    if getattr(args, "recipe", None):
        from ace_core.training.recipes import recipe_get

        return recipe_get(args.recipe).config(**explicit)  # explicit flags override the recipe
    return TrainConfig(**explicit)


def add_dataclass_flags(
    parser: argparse.ArgumentParser,
    cls: type,
    defaults: Mapping[str, Any] | None = None,
    helps: Mapping[str, str | None] | None = None,
    choices: Mapping[str, tuple] | None = None,
) -> None:
    """One flag per field of dataclass ``cls``, in its order (``--batch-size`` for ``batch_size``),
    of the field's type, default and docstring; a field without a default is a required flag.
    ``defaults``, ``helps`` (None: no help) and ``choices`` set a flag's own, by field name."""
    defaults, helps, choices = defaults or {}, helps or {}, choices or {}
    docs, hints = class_field_docs(cls), typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        name = field.name
        default = defaults.get(name, field.default)
        required = default is dataclasses.MISSING
        parser.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=_flag_type(hints[name]),
            **({"required": True} if required else {"default": default}),
            **({"choices": choices[name]} if name in choices else {}),
            help=helps.get(name, docs.get(name)),
        )


def from_args(cls: type, args: argparse.Namespace, **values: Any):
    """An instance of dataclass ``cls`` from its flags (:func:`add_dataclass_flags`): a flag left
    at None keeps the field's default; ``values`` set fields of their own."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if f.name not in values}
    return cls(**{name: value for name, value in given.items() if value is not None}, **values)


def _flag_type(hint: Any) -> type:
    """The type a flag parses to: the field's, without the None of an optional one."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return hint


def add_episode_flags(parser: argparse.ArgumentParser) -> None:
    """How evaluation episodes are played: under which line attacks, how heavy, and how long."""
    parser.add_argument(
        "--opponent",
        default="env",
        help="line attacks: env (the env's own opponent), none, random-line (grid2op's "
        "RandomLineOpponent as in rte_case14_opponent: one 4-hour attack a day) or storm (a 2-hour "
        "attack every 4 hours); settings after a colon, e.g. storm:cooldown=36,duration=12 "
        "(steps), budget (per step), initial",
    )
    parser.add_argument(
        "--demand-scale",
        type=float,
        default=1.0,
        help="multiply every load and production of the days played (1.05: 5%% heavier; 0.8 to 1.3)",
    )
    parser.add_argument(
        "--demand-spread",
        type=float,
        default=0.0,
        help="draw each load's share of the demand from the grid seed, this far apart (log-normal "
        "standard deviation, 0 to 0.3; 0.05: about 5%%): every seed then plays another day",
    )
    parser.add_argument(
        "--episode-length", type=int, default=288, help="steps per scenario (288 = one day, 864 = three)"
    )


def add_fanout_flags(parser: argparse.ArgumentParser) -> None:
    """Where evaluation episodes are played: here, or on Ray actors (the figures are the same)."""
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Ray worker processes for the episodes (1: in this process, without Ray)",
    )
    parser.add_argument(
        "--ray-address", default=None, help="HOST:PORT, ray://HOST:PORT or auto to play on a Ray cluster"
    )


def workers_of(args: argparse.Namespace) -> Workers:
    """Where the command's episodes play, from ``--workers`` and ``--ray-address``."""
    return Workers(args.workers, args.ray_address)


def add_grid_seed_flags(parser: argparse.ArgumentParser) -> None:
    """Which grid seeds each scenario is played with (attacks, maintenance noise)."""
    parser.add_argument(
        "--seeds", type=int, default=1, help="play each scenario with N grid seeds, from --first-seed on"
    )
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="the first grid seed: past a run's validation seeds, its validation days are judged "
        "on other episodes than those that chose its best.pt",
    )


def grid_seeds(args: argparse.Namespace) -> tuple[int, ...]:
    """The grid seeds :func:`add_grid_seed_flags` asked for, refused in words when none or negative."""
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds} must be at least 1")
    if args.first_seed < 0:
        raise ConfigError(f"--first-seed {args.first_seed} must be 0 or more")
    return tuple(range(args.first_seed, args.first_seed + args.seeds))
