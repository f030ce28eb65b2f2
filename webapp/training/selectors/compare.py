"""The comparison page's configuration table: only the settings that differ between the runs
compared, one row per setting and one value per run, in words."""

from __future__ import annotations

from webapp.audit.summaries import value_text
from webapp.training.models import TrainingRun


def config_differences(*, runs: list[TrainingRun]) -> list[tuple[str, list[str]]]:
    """(setting, each run's value in words, in the runs' order) for every setting whose value is
    not the same in all ``runs``, in the order the configs list them; a setting a run's config
    lacks (a run older than it) counts as a value of its own ("–")."""
    names = dict.fromkeys(name for run in runs for name in run.config)
    rows = []
    for name in names:
        values = [run.config.get(name) for run in runs]
        if any(value != values[0] for value in values[1:]):
            rows.append((name, [value_text(value) for value in values]))
    return rows
