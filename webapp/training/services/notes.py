"""The tags and note engineers put on a run (audited): words to find runs by on the runs list and
what a run was for, kept beside its results."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.training.models import RunTag, TrainingRun


@transaction.atomic
def run_notes_set(*, run: TrainingRun, user: AbstractBaseUser, tags: list[str], note: str) -> TrainingRun:
    """Replace the run's tags by ``tags`` (checked by the form: :func:`webapp.training.run_forms.tag_check`)
    and its note by ``note``."""
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    before = {"tags": list(run.tags.values_list("name", flat=True)), "note": run.note}
    run.tags.exclude(name__in=tags).delete()
    kept = set(run.tags.values_list("name", flat=True))
    RunTag.objects.bulk_create([RunTag(run=run, name=tag) for tag in tags if tag not in kept])
    run.note = note
    run.save(update_fields=["note"])
    audit_record(
        actor=user, action="run.notes", target=run, before=before, after={"tags": sorted(tags), "note": note}
    )
    return run
