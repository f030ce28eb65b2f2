"""Marking a checkpoint as the policy live sessions use.

The trainer overwrites ``checkpoint.pt`` as it goes, so the deployed file is a copy that never
changes: ``<GRIDACE_RUNS_DIR>/deployed/run-<id>-step-<step>.pt``. A run that validated keeps its
best policy as ``best.pt`` beside the checkpoint; that is the policy deployed then
(``run-<id>-step-<step>-best.pt``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.jobs.models import JobStatus
from webapp.training.errors import RunStateError
from webapp.training.models import Checkpoint, Deployment, TrainingRun

COMMENT_MAX_LENGTH = 500
BEST_NAME = "best.pt"
"""ace_core.checkpoint.BEST_NAME (not imported: it loads torch into the web process)"""


def policy_path(checkpoint_path: Path) -> Path:
    """The policy a run stands for: its ``best.pt`` (the best validated policy) when it sits beside
    the checkpoint, else the checkpoint itself (as :func:`ace_core.checkpoint.policy_file`)."""
    best = Path(checkpoint_path).with_name(BEST_NAME)
    return best if best.is_file() else Path(checkpoint_path)


@transaction.atomic
def checkpoint_deploy(*, checkpoint: Checkpoint, user: AbstractBaseUser, comment: str = "") -> Deployment:
    run = TrainingRun.objects.select_for_update().get(pk=checkpoint.run_id)
    if run.status != JobStatus.SUCCEEDED:
        raise RunStateError(
            f"run {run.pk} is {run.status}; only checkpoints of succeeded runs can be deployed"
        )
    latest = run.checkpoints.order_by("-id").first()
    if latest is None or latest.pk != checkpoint.pk:
        raise RunStateError(
            f"checkpoint at step {checkpoint.step} was overwritten; only the run's last checkpoint "
            f"(step {latest.step if latest else '?'}) can be deployed"
        )
    if len(comment) > COMMENT_MAX_LENGTH:
        raise RunStateError(
            f"comment is {len(comment)} characters long; accepted: at most {COMMENT_MAX_LENGTH}"
        )
    source = Path(checkpoint.path)
    if not source.is_file():
        raise RunStateError(f"checkpoint file {source} is missing on this machine; it cannot be deployed")
    source = policy_path(source)
    suffix = "-best" if source.name == BEST_NAME else ""
    target = Path(settings.GRIDACE_RUNS_DIR) / "deployed" / f"run-{run.pk}-step-{checkpoint.step}{suffix}.pt"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        shutil.copy2(source, target.with_suffix(".tmp"))
        target.with_suffix(".tmp").replace(target)
    previous = Deployment.objects.order_by("-deployed_at", "-id").first()
    deployment = Deployment.objects.create(
        checkpoint=checkpoint, deployed_by=user, deployed_at=timezone.now(), comment=comment, path=str(target)
    )
    audit_record(
        actor=user,
        action="checkpoint.deploy",
        target=checkpoint,
        before={"deployed_checkpoint": previous.checkpoint_id if previous else None},
        after={"deployed_checkpoint": checkpoint.pk, "path": str(target)},
        comment=comment,
    )
    return deployment
