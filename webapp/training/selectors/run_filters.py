"""The runs list, filtered by grid, recipe, status and tag and sorted, all on the server; and the
values its filters offer (grids and tags in use, recipes)."""

from __future__ import annotations

from django.db.models import F, OuterRef, QuerySet, Subquery

from ace_core.training.recipes import RECIPES
from webapp.training.models import RunTag, TrainingRun
from webapp.training.selectors.run_labels import CUSTOM, run_recipe_label
from webapp.training.selectors.runs import run_list

SORTS = {
    "newest": "newest first",
    "oldest": "oldest first",
    "grid": "grid",
    "recipe": "recipe",
    "status": "status",
    "tag": "tag",
    "best": "best validation survival",
}
"""the orders the runs list offers (query parameter ``sort``), newest first by default"""
DEFAULT_SORT = "newest"


def run_envs() -> list[str]:
    """The grids runs were launched on, in alphabetical order."""
    return list(TrainingRun.objects.order_by("env").values_list("env", flat=True).distinct())


def run_tags() -> list[str]:
    """The tags in use on runs, in alphabetical order."""
    return list(RunTag.objects.order_by("name").values_list("name", flat=True).distinct())


def recipe_choices() -> list[str]:
    """What the recipe filter accepts: every recipe, and ``custom`` (runs of no recipe)."""
    return [*RECIPES, CUSTOM]


def _recipe_of(runs: QuerySet[TrainingRun]) -> dict[int, str]:
    """Each run's recipe (``custom`` for none), from its config and the recipe it was launched from
    (a recipe is a set of values, not a column: computed here, over the configs alone)."""
    rows = runs.order_by().values_list("pk", "config", "from_recipe")
    return {
        pk: run_recipe_label(TrainingRun(config=config, from_recipe=from_recipe)).recipe or CUSTOM
        for pk, config, from_recipe in rows
    }


def runs_filtered(
    *, status: str = "", env: str = "", recipe: str = "", tag: str = "", sort: str = DEFAULT_SORT
) -> QuerySet[TrainingRun] | list[TrainingRun]:
    """The runs with that status, on that grid, of that recipe (``custom``: of none; a recipe
    edited at launch counts as the recipe) and carrying that tag (each filter left empty: any), in
    the order ``sort`` names (:data:`SORTS`; newest first within equals). A queryset, except in the
    recipe order (a list: recipes are computed from the configs)."""
    runs = run_list(status=status).prefetch_related("tags")
    if env:
        runs = runs.filter(env=env)
    if tag:
        runs = runs.filter(tags__name=tag)
    recipes: dict[int, str] = {}
    if recipe or sort == "recipe":
        recipes = _recipe_of(runs)
    if recipe:
        runs = runs.filter(pk__in=[pk for pk, name in recipes.items() if name == recipe])
    newest = ("-created_at", "-id")
    if sort == "oldest":
        return runs.order_by("created_at", "id")
    if sort in ("grid", "status"):
        return runs.order_by("env" if sort == "grid" else "status", *newest)
    if sort == "best":
        return runs.order_by(F("best_validation_survival").desc(nulls_last=True), *newest)
    if sort == "tag":
        first_tag = RunTag.objects.filter(run=OuterRef("pk")).order_by("name").values("name")[:1]
        return runs.annotate(first_tag=Subquery(first_tag)).order_by(
            F("first_tag").asc(nulls_last=True), *newest
        )
    if sort == "recipe":
        return sorted(runs, key=lambda run: recipes[run.pk])  # stable: newest first within a recipe
    return runs
