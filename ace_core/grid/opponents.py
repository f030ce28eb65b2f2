"""Line attacks: which opponent an environment runs, as ``grid2op.make`` keyword arguments.

- ``env``: the environment's own opponent, as its config sets it (l2rpn_neurips_2020_track1 and
  l2rpn_icaps_2021 attack lines; most 14-bus envs have no opponent);
- ``none``: no attacks (grid2op's defaults: ``BaseOpponent`` with ``NeverAttackBudget``);
- ``random-line``: grid2op's ``RandomLineOpponent`` with ``BaseActionBudget``, set as grid2op's
  own ``rte_case14_opponent`` env sets it: an attack disconnects one of the attacked lines, still in
  service, picked at random, for 4 hours (48 steps); the next may come 24 hours (288 steps) after
  the last began; the budget starts at 0 and grows by 0.5 a step, and an attack costs 1 a step of
  its duration, so the first attack comes no earlier than step 96 (8 hours in).

The attacked lines are grid2op's own lists: those of ``rte_case14_opponent`` on the 14-bus grids
(lines 1-3, 1-4, 3-6, 9-10, 11-12 and 12-13, by their substations) and those of
``l2rpn_neurips_2020_track1`` on the 36-substation grid it shares with l2rpn_icaps_2021. Another
env has no list: ``random-line`` is refused there with the envs that have one.

- ``storm``: the same opponent, striking every few hours: attacks of 2 hours (24 steps), the next
  4 hours (48 steps) after the last began, a budget growing by 2 a step (enough that the cooldown
  alone sets the pace; the first attack comes after an hour): six a day, where ``random-line``
  strikes once.

``random-line`` and ``storm`` take their settings after a colon, as an expert spec does:
``storm:cooldown=36,duration=12`` (steps), ``budget`` (per step) and ``initial`` (the budget at
step 0). :func:`check_opponent` gives a spec's canonical form (defaults dropped, keys in order),
which reports and tables record.

The Runner builds its environments from ``env.get_params_for_runner()``, which carries these
settings, so evaluation episodes are attacked as the env is.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ace_core.errors import ConfigError

DEFAULT_OPPONENT = "env"


@dataclass(frozen=True)
class Attacks:
    """How often a line-attacking opponent strikes (grid2op's ``BaseActionBudget`` settings)."""

    duration: int
    """steps an attack lasts (12 = one hour)"""
    cooldown: int
    """steps from the start of an attack to the earliest next one"""
    budget: float
    """budget gained per step; an attack costs 1 per step of its duration"""
    initial: float = 0.0
    """the budget at step 0"""

    def spec(self, profile: str) -> str:
        """``profile`` with the settings that differ from its defaults (``storm:cooldown=36``)."""
        default = PROFILES[profile]
        changed = [
            f"{f.name}={getattr(self, f.name):g}"
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        ]
        return f"{profile}:{','.join(changed)}" if changed else profile


# random-line: grid2op's rte_case14_opponent/config.py; storm: every few hours
PROFILES: dict[str, Attacks] = {
    "random-line": Attacks(duration=12 * 4, cooldown=12 * 24, budget=0.5),
    "storm": Attacks(duration=12 * 2, cooldown=12 * 4, budget=2.0),
}
OPPONENTS = ("env", "none", *PROFILES)
_LIMITS = {
    "duration": (1, 12 * 24),
    "cooldown": (1, 12 * 24 * 7),
    "budget": (0.0, 100.0),
    "initial": (0.0, 10_000.0),
}

_CASE14 = ("1_3_3", "1_4_4", "3_6_15", "9_10_12", "11_12_13", "12_13_14")
# rte_case14_redisp and rte_case14_test number the same lines differently
_CASE14_RENUMBERED = ("1_3_8", "1_4_9", "3_6_15", "9_10_4", "11_12_5", "12_13_6")
# grid2op's l2rpn_neurips_2020_track1/config.py
_NEURIPS_2020 = (
    "62_58_180",
    "62_63_160",
    "48_50_136",
    "48_53_141",
    "41_48_131",
    "39_41_121",
    "43_44_125",
    "44_45_126",
    "34_35_110",
    "54_58_154",
)
ATTACKED_LINES: dict[str, tuple[str, ...]] = {
    "rte_case14_realistic": _CASE14,
    "rte_case14_opponent": _CASE14,
    "l2rpn_case14_sandbox": _CASE14,
    "educ_case14_redisp": _CASE14,
    "educ_case14_storage": _CASE14,
    "rte_case14_redisp": _CASE14_RENUMBERED,
    "rte_case14_test": _CASE14_RENUMBERED,
    "l2rpn_neurips_2020_track1": _NEURIPS_2020,
    "l2rpn_icaps_2021": _NEURIPS_2020,
}


def parse_opponent(opponent: str) -> tuple[str, Attacks | None]:
    """The profile and its attacks (``None`` for ``env`` and ``none``) of an opponent spec."""
    if not isinstance(opponent, str):
        raise ConfigError(f"opponent {opponent!r} must be text; accepted: {', '.join(OPPONENTS)}")
    profile, _, settings = opponent.partition(":")
    if profile not in OPPONENTS:
        raise ConfigError(
            f"unknown opponent {opponent!r}; accepted: {', '.join(OPPONENTS)} "
            "(random-line and storm take settings, e.g. storm:cooldown=36,duration=12)"
        )
    if profile not in PROFILES:
        if settings:
            raise ConfigError(f"opponent {profile!r} takes no settings (got {settings!r})")
        return profile, None
    attacks = PROFILES[profile]
    for item in filter(None, settings.split(",")):
        attacks = replace(attacks, **_setting(profile, item))
    return profile, attacks


def _setting(profile: str, item: str) -> dict:
    key, _, text = item.partition("=")
    if key not in _LIMITS:
        raise ConfigError(
            f"opponent {profile}: unknown setting {key!r}; accepted: {', '.join(_LIMITS)} (e.g. {profile}:cooldown=36)"
        )
    low, high = _LIMITS[key]
    kind = int if isinstance(low, int) else float
    try:
        value = kind(text) if text.strip() == text and "_" not in text else None
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        number = "a whole number of steps" if kind is int else "a number"
        raise ConfigError(
            f"opponent {profile}: {key}={text!r} is refused; accepted: {number} from {low} to {high}"
        )
    return {key: value}


def check_opponent(opponent: str) -> str:
    """The canonical form of an opponent spec (a clear error for an unknown one)."""
    profile, attacks = parse_opponent(opponent)
    return attacks.spec(profile) if attacks is not None else profile


def opponent_kwargs(env_name: str, opponent: str) -> dict:
    """The ``grid2op.make`` keyword arguments that give ``env_name`` this opponent (none for ``env``)."""
    profile, attacks = parse_opponent(opponent)
    if profile == "env":
        return {}
    # grid2op only when an opponent is built: the names above are read by the web forms
    from grid2op.Action import DontAct, PowerlineSetAction
    from grid2op.Opponent import BaseActionBudget, BaseOpponent, NeverAttackBudget, RandomLineOpponent

    if attacks is None:  # none
        return {
            "opponent_class": BaseOpponent,
            "opponent_action_class": DontAct,
            "opponent_budget_class": NeverAttackBudget,
            "opponent_init_budget": 0.0,
            "opponent_budget_per_ts": 0.0,
            "opponent_attack_duration": 0,
            "opponent_attack_cooldown": 99999,
            "kwargs_opponent": {},
        }
    if env_name not in ATTACKED_LINES:
        raise ConfigError(
            f"opponent {profile!r} has no list of attacked lines for env {env_name!r}; "
            f"accepted envs: {', '.join(ATTACKED_LINES)} (or --opponent env, none)"
        )
    return {
        "opponent_class": RandomLineOpponent,
        "opponent_action_class": PowerlineSetAction,
        "opponent_budget_class": BaseActionBudget,
        "opponent_init_budget": attacks.initial,
        "opponent_budget_per_ts": attacks.budget,
        "opponent_attack_duration": attacks.duration,
        "opponent_attack_cooldown": attacks.cooldown,
        "kwargs_opponent": {"lines_attacked": list(ATTACKED_LINES[env_name])},
    }


def attackable_lines(env) -> tuple[str, ...]:
    """The lines ``env``'s opponent can strike, by name: grid2op's ``lines_attacked`` as the env's
    config or :func:`opponent_kwargs` set it, one list or one per area (l2rpn_idf_2023's
    ``GeometricOpponentMultiArea``); none when the opponent strikes no line."""
    named = (env.get_params_for_runner().get("opponent_kwargs") or {}).get("lines_attacked") or ()
    flat = (name for group in named for name in ([group] if isinstance(group, str) else group))
    return tuple(dict.fromkeys(flat))


def attacks_in(episode_data) -> int:
    """Attacks an episode saw: the steps where an attack begins (grid2op's ``EpisodeData.attacks``
    holds the opponent's action at every step, repeated while an attack lasts)."""
    if episode_data is None or episode_data.attacks is None:
        return 0
    rows = np.nan_to_num(np.asarray(episode_data.attacks.collection, dtype=float))
    active = (rows != 0).any(axis=1)
    previous = np.vstack([np.zeros_like(rows[:1]), rows[:-1]])
    return int((active & (rows != previous).any(axis=1)).sum())
