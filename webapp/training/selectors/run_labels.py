"""A run's recipe in words, for the runs list, the run page and the comparison page: the recipe it
was launched from and the settings changed since (an edited recipe is not "custom")."""

from __future__ import annotations

from dataclasses import dataclass, field

from ace_core.training.recipes import RECIPES, recipe_matching
from webapp.audit.summaries import recipe_diff
from webapp.training.models import TrainingRun

CHANGES_NAMED = 3
"""changed settings the short label names before "and N more\""""
CUSTOM = "custom"


@dataclass(frozen=True)
class RecipeLabel:
    """The recipe a run came from ("" for none) and its settings that differ from it, as
    (setting, recipe's value, run's value) in words."""

    recipe: str
    changes: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """``custom``, ``ace-14bus-offline``, or ``ace-14bus-offline, edited: steps, llm``."""
        if not self.recipe:
            return CUSTOM
        if not self.changes:
            return self.recipe
        names = [name for name, _, _ in self.changes]
        more = len(names) - CHANGES_NAMED
        return f"{self.recipe}, edited: {', '.join(names[:CHANGES_NAMED])}" + (
            f" and {more} more" if more > 0 else ""
        )

    @property
    def details(self) -> str:
        """Every change, ``steps: 20000 → 500; llm: offline → none`` (empty: none)."""
        return "; ".join(f"{name}: {old} → {new}" for name, old, new in self.changes)


def run_recipe_label(run: TrainingRun) -> RecipeLabel:
    """The recipe the run was launched from (recorded by the launch form) with the settings changed
    since; for a run with none recorded (older runs, the API, the command line), the recipe whose
    settings its config equals, else custom."""
    if run.from_recipe in RECIPES:
        diff = recipe_diff(run.config, run.from_recipe)
        return RecipeLabel(diff.base, diff.rows)
    return RecipeLabel(recipe_matching(run.config) or "")
