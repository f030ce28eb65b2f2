"""``manage.py day_difficulty [ENV ...] [--force]``: play doing nothing once on each day a live
session can choose, and keep its survival (the day's difficulty) in the cache folder, where the
session form reads it (:mod:`ace_core.live.days`). Days already played are skipped; an interrupted
run keeps the days it played. Without ``ENV``: the deployed policy's env.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ace_core.grid.envs import available_env_names, make_env
from ace_core.live.days import DifficultyCache, difficulty_compute, live_days
from webapp.training.selectors.deployments import deployment_current


class Command(BaseCommand):
    help = "Play doing nothing once on each day of an env and keep its survival for the session form."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("envs", nargs="*", help="env names (default: the deployed policy's env)")
        parser.add_argument("--force", action="store_true", help="play every day again")
        parser.add_argument("--quiet", action="store_true", help="write nothing but errors (the demo's)")

    def handle(self, *args: Any, envs: list[str], force: bool, quiet: bool, **options: Any) -> None:
        write = (lambda _text: None) if quiet else self.stdout.write
        if not envs:
            deployment = deployment_current()
            if deployment is None:
                raise CommandError(
                    "no policy is deployed: name the envs, e.g. day_difficulty l2rpn_case14_sandbox"
                )
            envs = [deployment.checkpoint.run.env]
        unknown = [name for name in envs if name not in available_env_names()]
        if unknown:
            raise CommandError(
                f"unknown env {', '.join(unknown)}; accepted: {', '.join(available_env_names())}"
            )
        for name in envs:
            env = make_env(name, cache_chronics=False)  # as grid2op's Runner wants it
            try:
                days = live_days(env)
                cache = DifficultyCache(name)
                write(f"{name}: {len(days)} days, kept in {cache.path}")
                difficulty_compute(
                    env, cache, days, force=force, progress=lambda day: write(f"  {day.words}")
                )
            finally:
                env.close()
            write(f"{name}: every day's difficulty is known")
