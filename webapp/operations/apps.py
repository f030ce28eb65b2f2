"""App config for live operations.

It registers how the watchdog recovers a day's play whose worker fell silent (failed with the
reason, so that the day-comparison page offers it again) in :mod:`webapp.jobs.recovery`.
"""

from __future__ import annotations

from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "webapp.operations"
    label = "operations"
    verbose_name = "Live operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from webapp.jobs.recovery import job_recovery_register

        job_recovery_register(
            kind="plays", recover="webapp.operations.services.session_episodes.day_plays_recover_silent"
        )
