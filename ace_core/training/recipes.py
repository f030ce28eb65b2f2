"""Named training recipes: the settings measured best on a grid, as presets.

A recipe is a name, a description that says what was measured (and where the figures are
written), the grids it suits and the :class:`~ace_core.config.TrainConfig` fields it sets; every
other field keeps its default. ``python -m ace_core train --recipe NAME`` and the web app's launch
page start from a recipe, and explicit settings override it. A recipe's figures come from the
files it names; a recipe not measured yet says so instead of quoting figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError

GRID_14_BUS = "rte_case14_realistic"
GRID_36_BUS = ("l2rpn_neurips_2020_track1", "l2rpn_wcci_2020")

# The LLM settings of docs/experiments/ace-rte_case14_realistic: a uniform pick of the decisions
# to refine, imitation of the accepted refinements, 300 LLM calls, an actor pass every 500 steps.
_REFINEMENT_SETTINGS = {
    "actor_selection": "random",
    "imitation": 1.0,
    "finetune_every": 50,
    "actor_every": 500,
    "critic_every": 3_000,
    "llm_budget": 300,
}

# RL from a clone, anchored on the expert's mined decisions and on its own simulated top k, with
# conservative critics (docs/results-imitation.md): shared by the 14-bus and 36-bus RL recipes.
_ANCHORED_RL = {
    "init_alpha": 0.01,
    "target_entropy_scale": 0.0,
    "teacher_prob": 1.0,
    "teacher_steps": 3_000_000,
    "teacher_budget": 0,
    "teacher_anchor": True,
    "anchor": 1.0,
    "conservative": 1.0,
    "steps": 3_000_000,
    "validation_seeds": 2,
    "validation_demand_scale": 1.1,
}

# The three-day 14-bus recipe's settings, which its variant for attacked grids shares.
_THREE_DAY_14BUS = {
    **_ANCHORED_RL,
    "episode_length": 864,
    "pretrain_mine": "auto",
    "pretrain_demand_scales": "1.05,1.1",
    "pretrain_seeds": 2,
    "teacher_top_k": 10,
    "validate_every": 500,
    "decisions": 8_000,
}


# The 36-bus stress clone's mines (the days as they are, x1.10, under the storm), which its RL
# recipe shares.
_STRESS_36BUS = {
    "pretrain_mine": "auto",
    "pretrain_expert": "greedy:threshold=0.8",
    "pretrain_seeds": 5,
    "pretrain_demand_scales": "1.1",
    "pretrain_attacks": "storm",
}

# RL from the stress clone, acting from max rho 1.0 as the plain policy is deployed, best.pt chosen
# on the validation days as they are, x1.10 and under the storm: shared by the 36-bus RL recipes
# on heavier days and under the storm.
_STRESS_RL_36BUS = {
    **_STRESS_36BUS,
    **_ANCHORED_RL,
    "rho_threshold": 1.0,
    "teacher_top_k": 50,
    "decisions": 2_000,
    "validate_every": 250,
    "validation_opponent": "storm",
}


@dataclass(frozen=True)
class Recipe:
    """A named preset: the TrainConfig fields it sets and what is known of its results."""

    name: str
    description: str
    """what the recipe does, what it was measured to reach and where (or "not yet measured")"""
    envs: tuple[str, ...]
    """the grids it suits; the first is the one it sets"""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """the TrainConfig fields it sets besides ``env``"""
    minutes: float | None = None
    """wall time of one run measured on 2 CPU cores, mines included the first time; None: not
    measured"""

    def values(self) -> dict[str, Any]:
        """Every TrainConfig field: the defaults, then the recipe's env and settings."""
        return {**TrainConfig().to_dict(), "env": self.envs[0], **self.settings}

    def config(self, **overrides: Any) -> TrainConfig:
        """The recipe's TrainConfig with ``overrides`` on top (not validated: call validate())."""
        return TrainConfig.from_dict({**self.values(), **overrides})


def _recipe(
    name: str, description: str, envs: tuple[str, ...], minutes: float | None = None, **settings: Any
) -> Recipe:
    return Recipe(name, " ".join(description.split()), envs, MappingProxyType(settings), minutes)


RECIPES: Mapping[str, Recipe] = MappingProxyType(
    {
        recipe.name: recipe
        for recipe in (
            _recipe(
                "ace-14bus-offline",
                """ACE with the offline SmolLM2-135M model: the LLM actor refines a uniform pick of
                the low-reward decisions, the policy imitates the refinements simulation accepted,
                a LoRA round every 50 of them, no critic (the 135M critic shapes by position).
                Test survival 0.870 +- 0.013, episode reward 43.6 +- 0.8 over training seeds 0-2
                (plain SAC 0.826 +- 0.081, do-nothing 0.777); about 18 min per run on 2 CPU cores.
                Figures: docs/experiments/ace-rte_case14_realistic/ace-no-critic, docs/ace.md.""",
                (GRID_14_BUS,),
                minutes=18,
                steps=30_000,
                llm="local",
                critic=False,
                **_REFINEMENT_SETTINGS,
            ),
            _recipe(
                "random-refine-14bus",
                """The ACE loop without a language model (the random control): a uniform pick among
                the actor's candidate actions, kept only when simulation proves it better, imitated
                by the policy. Test survival 0.849 +- 0.057, reward 42.9 +- 4.5 over training seeds
                0-4 (ACE with its critic 0.803 +- 0.078, plain SAC 0.717 +- 0.196); about 1 min per
                run. Use it where no LLM is installed. Figures:
                docs/experiments/ace-rte_case14_realistic.""",
                (GRID_14_BUS,),
                minutes=1,
                steps=30_000,
                llm="random",
                critic=False,
                **_REFINEMENT_SETTINGS,
            ),
            _recipe(
                "sac-14bus",
                """Plain discrete SAC, 30,000 environment steps (about 1,600 agent decisions), 1-4
                min per run. Test survival 0.826 +- 0.081 over training seeds 0-2 and 0.717 +-
                0.196 over seeds 0-4 (docs/experiments/ace-rte_case14_realistic), 0.864 +- 0.060
                in an earlier series (docs/results-rte_case14_realistic.md); do-nothing 0.777.
                Uneven across seeds: compare seeds before deploying one.""",
                (GRID_14_BUS,),
                minutes=4,
                steps=30_000,
            ),
            _recipe(
                "sac-36bus",
                """Plain discrete SAC on the 36-substation grid, 30,000 environment steps (the automatic
                head is the factorised one for its 66,810 topology actions). Not yet measured as a
                recipe: it is the starting point to beat, not a recommendation; in an outside trial
                on multi-day episodes of l2rpn_neurips_2020_track1 it survived less than doing
                nothing (0.49 and 0.39 over two training seeds, do-nothing 0.62).""",
                GRID_36_BUS,
                steps=30_000,
            ),
            _recipe(
                "imitation-sac-14bus",
                """SAC started from behaviour cloning of the greedy expert: the run first mines the
                expert on the train days (2 grid seeds each, cached and reused by every run that
                asks for the same mine), clones it, then trains with a budget of 20,000 agent
                decisions (2,000,000 environment steps at most), validating every 500 decisions
                and keeping the best policy as best.pt. Measured: SAC unlearns the clone
                (validation survival 0.831 at the start, 0.732, doing nothing's level, after 2,000
                to 3,000 decisions, with or without a critics-first delay), so best.pt keeps the
                clone itself. `python -m ace_core dagger` improves the clone instead. Figures:
                docs/results-imitation.md.""",
                (GRID_14_BUS,),
                pretrain_mine="auto",
                pretrain_seeds=2,
                validate_every=500,
                decisions=20_000,
                steps=2_000_000,
            ),
            _recipe(
                "imitation-sac-14bus-3day",
                """Three-day episodes on the 14-bus grid: the run mines the expert on the train days
                as they are and with every load and production x1.05 and x1.10 (cached, reused),
                clones it from the three mines, then trains SAC for 8,000 agent decisions with the
                expert's mined decisions and its own simulated top-10 choices as an anchor and a
                conservative critic, validating every 500 decisions on the validation days as they
                are and at x1.10 and keeping the best policy as best.pt. Plain, with no simulation,
                it holds every three-day test episode: 1.000 over training seeds 0-4 x 5 grid seeds
                (do-nothing and reconnect 0.480); checked (top 10) 1.000 with 0.5 simulations per
                step; under line attacks checked 0.377 (expert 0.397). About 7 min per run on one
                core once the mines are made (10 min, once). Figures: docs/results-imitation.md,
                docs/experiments/three-day-14bus.""",
                (GRID_14_BUS,),
                minutes=17,
                **_THREE_DAY_14BUS,
            ),
            _recipe(
                "imitation-sac-14bus-3day-heavy",
                """The three-day 14-bus recipe for heavier days: the same three mines and clone
                (cached, shared with imitation-sac-14bus-3day), then its RL played on the train
                days with every load and production x1.10, and best.pt chosen on the validation
                days played heavier and uneven (x1.05, x1.10 and x1.15, each load's share drawn
                per grid seed and day, 5 grid seeds: 45 three-day episodes a validation) among the
                policies that hold at least 0.95 of the validation days as they are. On validation
                days set apart from its own choice, plain, it holds the heavier uneven days longer
                than imitation-sac-14bus-3day's best.pt on average over six training seeds (chosen
                on three; shorter in the three others), and the days as they are as well. About 16
                min per run on one core once the mines are made (25 min with them, --workers 2).
                Figures: docs/results-stress.md (RL on heavier days, best.pt chosen on uneven
                days).""",
                (GRID_14_BUS,),
                minutes=25,
                **_THREE_DAY_14BUS,
                demand_scale=1.1,
                validation_uneven="1.05,1.1,1.15",
                validation_decides="uneven",
                validation_floor=0.95,
            ),
            _recipe(
                "imitation-sac-14bus-3day-attacks",
                """The three-day 14-bus recipe for a grid under line attacks, one plain policy for both
                kinds of day: its mines are those of the three-day recipe (the train days as they
                are, x1.05 and x1.10) and the train days under random-line attacks (one 4-hour
                attack a day, 6 grid seeds: three times the attacks of 2, chosen on validation);
                its RL is played under the same attacks, and best.pt is the policy
                that holds most of the attacked validation days (6 grid seeds) among those that
                hold at least 0.95 of the validation days as they are. On validation, plain, it
                holds nearly every ordinary day and longer than the expert under attacks; on the
                test days, checked as deployed, it holds longer than the expert under attacks
                with a tenth of its simulations or less, and every ordinary day; plain, it holds
                the attacked test days well above reconnect and loses some ordinary ones. About 20 min for a first
                run here, its mines included. Figures: docs/results-stress.md (trained under line
                attacks; one plain policy for both kinds of day).""",
                (GRID_14_BUS,),
                minutes=20,
                **_THREE_DAY_14BUS,
                opponent="random-line",
                pretrain_opponent="env",
                pretrain_attacks="random-line",
                pretrain_attack_seeds=6,
                validation_opponent="random-line",
                validation_decides="attacks",
                validation_floor=0.95,
                validation_attack_seeds=6,
            ),
            _recipe(
                "stress-clone-36bus",
                """The 36-substation grid's policy for stress, clone only (no RL): the run mines the
                greedy expert (acting from max rho 0.8) on the train days as they are, with every
                load and production x1.10, and under a storm of line attacks (a 2-hour attack
                every 4 hours), 5 grid seeds each (cached and reused), clones the three mines and
                validates the clone. Deployed checked (top 50, stop 0.9, a safety net of 30
                simulations that also redispatches, curtails and uses storage) it holds the
                expert's survival on ordinary days, up to x1.10 and in the storm with a tenth of
                its simulations or less, and at x1.15 when its moves are released below max rho
                0.85, as deployed; plain it is above
                doing nothing on every stress row. As one run with --workers 2 (the mines on two
                Ray workers) it took 11.5 min here, its clone the command line's, weight for
                weight. Figures: docs/results-stress.md (a safety net beyond topology, and the
                recipe as one run).""",
                ("l2rpn_neurips_2020_track1",),
                minutes=12,
                steps=0,
                validate_every=500,
                **_STRESS_36BUS,
            ),
            _recipe(
                "stress-sac-36bus",
                """The 36-substation grid's plain policy for stress: the stress clone's three mines
                (the train days as they are, x1.10 and under the storm; cached and shared with
                stress-clone-36bus) cloned, then 2,000 agent decisions of RL on the train days
                x1.10, acting from max rho 1.0 as the plain policy is deployed, exploring with
                its simulated top 50, anchored on the expert's decisions and the check's, with
                conservative critics; best.pt is chosen every 250 decisions on the validation days
                as they are, x1.10 and under the storm. Measured in part: seed 0 on four grown
                weeks, stopped at 1,500 decisions, holds longer than reconnect on three of the four
                stress rows of the test days (at its level at x1.10), below the same RL started
                from two weeks' clones; its mines took 86 min here. Figures: docs/results-stress.md
                (the RL recipe as one run).""",
                ("l2rpn_neurips_2020_track1",),
                **_STRESS_RL_36BUS,
                demand_scale=1.1,
            ),
            _recipe(
                "storm-sac-36bus",
                """stress-sac-36bus with its RL under the storm (an attack every few hours) instead
                of on heavier days: the same three mines (the days as they are mined as the env
                plays them, pretrain_opponent=env, so the cache is shared), the same RL and
                validation. Not measured as a recipe: the same settings run from the command line
                from the stress clones held longer than reconnect on every stress row of the test
                days plain, and the storm longer than the expert checked as deployed. Figures:
                docs/results-stress.md (RL under the storm).""",
                ("l2rpn_neurips_2020_track1",),
                **_STRESS_RL_36BUS,
                opponent="storm",
                pretrain_opponent="env",
            ),
            _recipe(
                "imitation-sac-36bus",
                """SAC on the 36-substation grid started from behaviour cloning of the greedy expert
                (acting from max rho 0.8), mined on the train days with 40 grid seeds each (2,232
                expert decisions on the bundled copy, about 40 min here; cached and reused), then
                10,000 agent decisions (2,000,000 environment steps at most), validating every 500
                decisions and keeping the best policy as best.pt. Measured on the clone alone:
                checked by simulation as deployed (sac-checked, top 50, first safe below max rho
                0.9) it survives 0.853 +- 0.001 of the test day over 3 cloning seeds with 1.5
                simulations per step (the expert 0.878 with 59, doing nothing 0.698); plain, 0.640.
                Figures: docs/results-imitation.md.""",
                GRID_36_BUS,
                pretrain_mine="auto",
                pretrain_expert="greedy:threshold=0.8",
                pretrain_seeds=40,
                validate_every=500,
                decisions=10_000,
                steps=2_000_000,
            ),
        )
    }
)


def quickest_recipe(env: str) -> str | None:
    """The measured recipe for ``env`` with the shortest run (what the launch page starts from:
    an engineer sees a result in minutes, then picks a longer recipe); None when no recipe for
    ``env`` is measured."""
    measured = [r for r in RECIPES.values() if env in r.envs and r.minutes is not None]
    return min(measured, key=lambda r: r.minutes).name if measured else None


DEFAULT_RECIPE = quickest_recipe(GRID_14_BUS)
"""the recipe the launch page starts from: the quickest measured on the default grid"""


def recipe_names() -> tuple[str, ...]:
    return tuple(RECIPES)


def recipe_get(name: str) -> Recipe:
    """The recipe called ``name``; ConfigError naming the accepted names otherwise."""
    try:
        return RECIPES[name]
    except KeyError:
        raise ConfigError(f"unknown recipe {name!r}; accepted: {', '.join(RECIPES)}") from None


def recipe_matching(config: dict[str, Any]) -> str | None:
    """The recipe whose settings a run's config (as a dict) equals, seed aside; None for a
    custom config. A setting the dict lacks (added since the run) has its default."""
    defaults = TrainConfig().to_dict()
    for recipe in RECIPES.values():
        values = recipe.values()
        if config.get("env") in recipe.envs and all(
            config.get(name, defaults[name]) == value
            for name, value in values.items()
            if name not in ("seed", "env")
        ):
            return recipe.name
    return None
