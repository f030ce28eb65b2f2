"""The checks of :meth:`ace_core.config.run.TrainConfig.validate`, section by section.

Each raises :class:`ConfigError` naming the flat setting first (the web form puts the message on
the field it names), the bad value and what is accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ace_core.config.checks import (
    ACTOR_ANSWERS,
    ACTOR_SELECTIONS,
    CRITIC_FORMATS,
    HEADS,
    LLM_BACKENDS,
    MAX_STEPS,
    MOVE_LABELS,
    TRAJECTORY_SELECTIONS,
    VALIDATION_DECIDES,
    in_range,
    one_of,
)
from ace_core.errors import ConfigError
from ace_core.grid.demand import DEMAND_SCALE_RANGE, DEMAND_SPREAD_RANGE

if TYPE_CHECKING:
    from ace_core.config.run import TrainConfig


def check_config(config: TrainConfig) -> None:
    """Raise ConfigError on the first bad setting of ``config``."""
    check_run(config)
    check_learning(config)
    check_teacher(config)
    check_llm(config)


def check_run(config: TrainConfig) -> None:
    from ace_core.grid.envs import available_env_names
    from ace_core.grid.opponents import opponent_kwargs

    names = available_env_names()
    if config.env not in names:
        raise ConfigError(f"unknown env {config.env!r}; available: {', '.join(names)}")
    in_range("steps", config.steps, 0, MAX_STEPS)
    if config.steps == 0 and not config.pretrain.mine:
        raise ConfigError(
            "steps=0 is a clone-only run (mine, clone, validate) and needs pretrain_mine "
            "(auto or a mine directory); give steps >= 1 to train with RL"
        )
    in_range("seed", config.seed, 0, 2**31 - 1)
    in_range("rho_threshold", config.rho_threshold, 0.0, 2.0)
    in_range("episode_length", config.episode_length, 2, MAX_STEPS)
    opponent_kwargs(config.env, config.opponent)  # an unknown opponent, or random-line without attacked lines
    in_range("demand_scale", config.demand_scale, *DEMAND_SCALE_RANGE)
    in_range("demand_spread", config.demand_spread, *DEMAND_SPREAD_RANGE)
    one_of("head", config.sac.head, HEADS)
    if config.action_subset and not Path(config.action_subset).is_file():
        raise ConfigError(
            f"action_subset {config.action_subset!r} is not a file; give a file of action indices or leave it empty"
        )
    if config.init_from and not Path(config.init_from).exists():
        raise ConfigError(
            f"init_from {config.init_from!r} does not exist; give a checkpoint file or run directory, or leave it empty"
        )
    in_range("decisions", config.decisions, 0, MAX_STEPS)
    in_range("validate_every", config.validation.every, 0, MAX_STEPS)
    in_range("validation_seeds", config.validation.seeds, 1, 100)
    in_range("validation_demand_scale", config.validation.demand_scale, *DEMAND_SCALE_RANGE)
    if config.validation.opponent:
        check_attacks("validation_opponent", config.env, config.validation.opponent)
    in_range("validation_attack_seeds", config.validation.attack_seeds, 0, 100)
    if config.validation.attack_seeds and not config.validation.opponent:
        raise ConfigError(
            "validation_attack_seeds: the seeds of the attacked copy need validation_opponent, the "
            "attacks the days are played under (random-line, storm); or leave it at 0"
        )
    config.validation.uneven_scales()  # each scale in range, none twice
    in_range("validation_uneven_seeds", config.validation.uneven_seeds, 1, 100)
    one_of("validation_decides", config.validation.decides, VALIDATION_DECIDES)
    if config.validation.decides == "attacks" and not config.validation.opponent:
        raise ConfigError(
            "validation_decides: 'attacks' needs validation_opponent, the attacks the days are played "
            "under (random-line, storm); or set validation_decides=mean"
        )
    if config.validation.decides == "uneven" and not config.validation.uneven:
        raise ConfigError(
            "validation_decides: 'uneven' needs validation_uneven, the demand scales of the uneven "
            "copies (e.g. 1.05,1.1,1.15); or set validation_decides=mean"
        )
    in_range("validation_floor", config.validation.floor, 0.0, 1.0)
    check_pretrain(config)
    check_anchor(config)


def check_attacks(setting: str, env: str, attacks: str) -> None:
    """``attacks`` is an opponent profile that attacks lines of ``env`` (``setting`` names it in the error)."""
    from ace_core.grid.opponents import PROFILES, opponent_kwargs

    try:
        opponent_kwargs(env, attacks)  # an unknown profile or setting, or a grid without lines
    except ConfigError as exc:
        raise ConfigError(f"{setting}: {exc}") from None
    if attacks.partition(":")[0] not in PROFILES:
        raise ConfigError(
            f"{setting}: {attacks!r} makes no attacks; accepted: {', '.join(PROFILES)} "
            "(with settings, e.g. storm:cooldown=36), or empty"
        )


def check_pretrain_attacks(config: TrainConfig) -> None:
    """``pretrain_attacks``: an opponent with attacks that the grid has attacked lines for, mined
    by auto, and other than the run's own opponent (whose mine is made anyway)."""
    from ace_core.grid.opponents import check_opponent

    attacks = config.pretrain.attacks
    check_attacks("pretrain_attacks", config.env, attacks)
    if config.pretrain.mine != "auto":
        raise ConfigError(
            "pretrain_attacks are attacked days auto mines; set pretrain_mine=auto, or mine them "
            "with `python -m ace_core mine --opponent` and name them in anchor_mine"
        )
    if check_opponent(attacks) == check_opponent(config.pretrain.mines_opponent(config.opponent)):
        raise ConfigError(
            f"pretrain_attacks {attacks!r} is the opponent the days as they are are mined under "
            "anyway (pretrain_opponent, else the run's own); give another profile, or leave it empty"
        )


def check_pretrain_opponent(config: TrainConfig) -> None:
    """``pretrain_opponent``: a known profile, for auto mines."""
    from ace_core.grid.opponents import opponent_kwargs

    try:
        opponent_kwargs(config.env, config.pretrain.opponent)  # an unknown profile or setting
    except ConfigError as exc:
        raise ConfigError(f"pretrain_opponent: {exc}") from None
    if config.pretrain.mine != "auto":
        raise ConfigError(
            "pretrain_opponent is the opponent auto mines play under; set pretrain_mine=auto, or "
            "mine with `python -m ace_core mine --opponent` and name the mine in pretrain_mine"
        )


def check_pretrain(config: TrainConfig) -> None:
    pretrain = config.pretrain
    in_range("pretrain_seeds", pretrain.seeds, 1, 1_000)
    in_range("pretrain_epochs", pretrain.epochs, 1, 10_000)
    if len(pretrain.scales()) > 1 and pretrain.mine != "auto":
        raise ConfigError(
            "pretrain_demand_scales are the heavier days auto mines; set pretrain_mine=auto, or "
            "mine heavier days with `python -m ace_core mine --demand-scale` and name them in anchor_mine"
        )
    if pretrain.opponent:
        check_pretrain_opponent(config)
    if pretrain.attacks:
        check_pretrain_attacks(config)
    if pretrain.attack_seeds:
        in_range("pretrain_attack_seeds", pretrain.attack_seeds, 0, 1_000)
        if not pretrain.attacks:
            raise ConfigError(
                "pretrain_attack_seeds are the grid seeds of the attacked days' mine; set "
                "pretrain_attacks too, or leave it 0"
            )
    if pretrain.moves:
        in_range("pretrain_moves", pretrain.moves, 0, 200)
        one_of("pretrain_move_labels", pretrain.move_labels, MOVE_LABELS)
    if not pretrain.mine:
        if pretrain.moves:
            raise ConfigError(
                "pretrain_moves are learned from the mines' continuous moves; set pretrain_mine "
                "(auto, with an expert that plays them, e.g. greedy:threshold=0.8,flex=4), or leave it 0"
            )
        return
    if config.init_from:
        raise ConfigError("init_from and pretrain_mine both choose the starting policy; give one of them")
    if config.action_subset:
        raise ConfigError(
            "pretrain_mine clones the expert over the full action space; leave action_subset "
            "empty with it (or give no pretrain_mine)"
        )
    if pretrain.mine == "auto":
        check_pretrain_expert(pretrain.expert)
        check_pretrain_moves_expert(config)
    elif not (Path(pretrain.mine) / "summary.json").is_file():
        raise ConfigError(
            f"pretrain_mine {pretrain.mine!r} is not a finished mine (no summary.json); "
            "give a directory written by `python -m ace_core mine`, auto, or leave it empty"
        )


def check_pretrain_expert(expert: str) -> None:
    from ace_core.config.expert import parse_expert_spec

    name, _, settings = expert.partition(":")
    if name != "greedy":
        raise ConfigError(
            f"pretrain_expert {expert!r}: unknown expert {name!r}; accepted: "
            "greedy, greedy:BUDGET or greedy:key=value,..."
        )
    try:
        parse_expert_spec(settings)
    except ConfigError as exc:
        raise ConfigError(f"pretrain_expert: {exc}") from None


def check_pretrain_moves_expert(config: TrainConfig) -> None:
    """``pretrain_moves`` with auto mines: the expert must play continuous moves (``flex``)."""
    from ace_core.config.expert import parse_expert_spec

    pretrain = config.pretrain
    if pretrain.moves and not parse_expert_spec(pretrain.expert.partition(":")[2]).flex:
        raise ConfigError(
            f"pretrain_moves={pretrain.moves} learns the expert's continuous moves, and pretrain_expert "
            f"{pretrain.expert!r} plays none; give it flex (e.g. greedy:threshold=0.8,flex=4), or set "
            "pretrain_moves=0"
        )


def check_anchor(config: TrainConfig) -> None:
    in_range("anchor", config.sac.anchor, 0.0, 100.0)
    in_range("anchor_action_weight", config.sac.anchor_action_weight, 0.01, 100.0)
    if config.sac.anchor == 0:
        return
    if not config.anchor_mines():
        raise ConfigError(
            "anchor > 0 clones the expert's mined decisions during RL; give anchor_mine "
            "(a mine directory) or pretrain_mine, or set anchor=0"
        )
    if not config.anchoring.mine:
        return  # the pretrain mine is checked with the pretrain settings
    for mine in config.anchor_mines():
        if not (Path(mine) / "summary.json").is_file():
            raise ConfigError(
                f"anchor_mine {mine!r} is not a finished mine (no summary.json); give directories "
                "written by `python -m ace_core mine`, comma-separated, or leave it empty for the "
                "pretrain mine"
            )


def check_learning(config: TrainConfig) -> None:
    sac = config.sac
    in_range("hidden", sac.hidden, 8, 4096)
    in_range("gamma", sac.gamma, 0.0, 1.0)
    in_range("tau", sac.tau, 0.0, 1.0)
    in_range("policy_lr", sac.policy_lr, 1e-7, 1.0)
    in_range("q_lr", sac.q_lr, 1e-7, 1.0)
    in_range("batch_size", config.batch_size, 1, 65_536)
    in_range("buffer_size", config.buffer_size, 1, 10_000_000)
    in_range("learning_starts", config.learning_starts, 1, 10_000_000)
    if config.learning_starts < config.batch_size:
        raise ConfigError(
            f"learning_starts ({config.learning_starts}) must be at least batch_size ({config.batch_size})"
        )
    in_range("update_every", config.update_every, 1, 10_000)
    in_range("gradient_steps", config.gradient_steps, 1, 1_000)
    in_range("target_entropy_scale", sac.target_entropy_scale, 0.0, 1.0)
    in_range("init_alpha", sac.init_alpha, 1e-6, 100.0)
    in_range("actor_delay", sac.actor_delay, 0, 10_000_000)
    in_range("conservative", sac.conservative, 0.0, 100.0)
    in_range("checkpoint_every", config.checkpoint_every, 1, MAX_STEPS)
    in_range("log_every", config.log_every, 1, MAX_STEPS)
    in_range("torch_threads", config.torch_threads, 1, 256)


def check_teacher(config: TrainConfig) -> None:
    teacher = config.teacher
    in_range("teacher_prob", teacher.prob, 0.0, 1.0)
    in_range("teacher_steps", teacher.steps, 1, MAX_STEPS)
    in_range("teacher_top_k", teacher.top_k, 0, 64)
    in_range("teacher_budget", teacher.budget, 0, 1024)
    if teacher.prob > 0 and teacher.top_k + teacher.budget == 0:
        raise ConfigError(
            "teacher_prob > 0 needs candidates for the expert to simulate; "
            "set teacher_top_k or teacher_budget above 0 (or teacher_prob=0)"
        )
    if teacher.anchor and (teacher.prob == 0 or config.sac.anchor == 0):
        raise ConfigError(
            "teacher_anchor clones the teacher's decisions in the anchor term; "
            "set teacher_prob > 0 and anchor > 0 (or leave teacher_anchor off)"
        )


def check_llm(config: TrainConfig) -> None:
    actor, critic = config.llm_actor, config.llm_critic
    one_of("llm", config.llm, LLM_BACKENDS)
    in_range("r_bar", config.r_bar, -10.0, 10.0)
    in_range("shaping_k", critic.k, 0.0, 10.0)
    in_range("beta", config.beta, 0.0, 1.0)
    in_range("imitation", config.sac.imitation, 0.0, 100.0)
    in_range("actor_every", config.actor_every, 1, MAX_STEPS)
    in_range("critic_every", config.critic_every, 1, MAX_STEPS)
    in_range("finetune_every", config.finetune_every, 0, 100_000)
    one_of("trajectory_selection", critic.selection, TRAJECTORY_SELECTIONS)
    in_range("llm_budget", config.llm_budget, 0, 1_000_000)
    in_range("actor_batch", config.actor_batch, 1, 10_000)
    one_of("actor_selection", config.actor_selection, ACTOR_SELECTIONS)
    in_range("actor_candidates", actor.candidates, 1, 26)
    in_range("actor_rounds", actor.rounds, 1, 26)
    one_of("actor_answer", actor.answer, ACTOR_ANSWERS)
    if actor.calibrate and actor.answer != "letter":
        raise ConfigError(
            "llm_calibrate removes a model's prior for option letters; it needs actor_answer='letter'"
        )
    in_range("critic_threshold", critic.threshold, 0.0, 10.0)
    one_of("critic_format", critic.format, CRITIC_FORMATS)
    in_range("critic_key_steps", critic.choice_key_steps, 1, 26)
    in_range("priority_temperature", config.priority_temperature, 1e-3, 100.0)
    in_range("priority_max", config.priority_max, 1.0, 1e6)
    in_range("finetune_max_steps", config.finetune.max_steps, 0, 1_000_000)
    in_range("llm_timeout", config.llm_timeout, 0.1, 3600.0)
    if config.llm == "random" and config.critic:
        raise ConfigError(
            "llm='random' is the actor control and has no language model for the critic; "
            "add --no-critic (critic=False) or choose llm local or openai"
        )
