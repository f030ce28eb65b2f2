"""``manage.py launch_run``: launch a training run from the command line (as a given user).

Example: ``manage.py launch_run --user engineer --set env=rte_case14_realistic --set steps=2000
--set llm=local``. Every ``--set`` names a TrainConfig field; values are read as that field's type.
``--recipe NAME`` starts from a named recipe (``python -m ace_core recipes``); ``--set`` overrides it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ace_core.config import TrainConfig, config_fields
from ace_core.errors import ConfigError
from ace_core.training.recipes import recipe_get
from webapp.training.services.runs import run_launch

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """``["steps=300", "actor=false"]`` -> ``{"steps": 300, "actor": False}``, typed by the field."""
    fields = {field.name: field for field in config_fields()}
    values: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        if not sep:
            raise ConfigError(f"--set {assignment!r} is not name=value")
        if name not in fields:
            raise ConfigError(f"unknown config field {name!r}; accepted: {', '.join(sorted(fields))}")
        kind = fields[name].type
        try:
            if kind is bool:
                if raw.lower() not in TRUE_WORDS | FALSE_WORDS:
                    raise ValueError
                values[name] = raw.lower() in TRUE_WORDS
            else:
                values[name] = kind(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
    return values


class Command(BaseCommand):
    help = "Launch a training run (queued for `manage.py db_worker --queue-name training`)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="username of the engineer launching it")
        parser.add_argument("--label", default="")
        parser.add_argument("--recipe", default="", help="start from this named recipe; --set overrides it")
        parser.add_argument("--set", action="append", default=[], dest="assignments", metavar="FIELD=VALUE")

    def handle(
        self, *args: Any, user: str, label: str, assignments: list[str], recipe: str = "", **options: Any
    ) -> None:
        launcher = get_user_model().objects.filter(username=user).first()
        if launcher is None:
            raise CommandError(f"no user named {user!r}; run `manage.py seed_demo` or create one")
        if not launcher.has_perm("training.launch_trainingrun"):
            raise CommandError(f"user {user!r} may not launch runs; it needs the engineer role")
        try:
            values = parse_assignments(assignments)
            config = recipe_get(recipe).config(**values) if recipe else TrainConfig.from_dict(values)
            run = run_launch(config=config, launched_by=launcher, label=label)
        except ConfigError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"run {run.pk} queued: {run.env}, {run.total_steps} steps, path /runs/{run.pk}/")
