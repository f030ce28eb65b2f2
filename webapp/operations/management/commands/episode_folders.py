"""``manage.py episode_folders``: the folders the day-comparison page may open episodes from
(evaluations under the runs folder, finished sessions' exports, ``GRIDACE_EPISODE_ROOTS``) and,
for each extra root, the names the page lists its grid2op Runner episodes by.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from webapp.operations.episode_sources import runner_episodes
from webapp.operations.services.session_episodes import session_episodes_root


class Command(BaseCommand):
    help = "List the folders the day-comparison page may open episodes from, and their episodes."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"runs (evaluations): {Path(settings.GRIDACE_RUNS_DIR)}")
        self.stdout.write(f"finished sessions, exported on first use: {session_episodes_root()}")
        extras = list(settings.GRIDACE_EPISODE_ROOTS)
        if not extras:
            self.stdout.write(
                "no extra roots; set GRIDACE_EPISODE_ROOTS (comma-separated folders) to add some"
            )
        for i, extra in enumerate(extras, start=1):
            root = Path(extra)
            if not root.is_dir():
                self.stdout.write(f"extra{i}: {root} (not a folder: nothing to open)")
                continue
            episodes = runner_episodes(root)
            self.stdout.write(f"extra{i}: {root} ({len(episodes)} episodes)")
            for folder in episodes:
                self.stdout.write(f"  extra{i}/{folder.relative_to(root)}")
