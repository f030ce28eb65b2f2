"""Marking a checkpoint as the policy live sessions use, with the guard engineers deploy through,
and the rollback to the deployment before.

The trainer overwrites ``checkpoint.pt`` as it goes, so the deployed file is a copy that never
changes: ``<GRIDACE_RUNS_DIR>/deployed/run-<id>-step-<step>.pt``. A run that validated keeps its
best policy as ``best.pt`` beside the checkpoint; that is the policy deployed then
(``run-<id>-step-<step>-best.pt``).

The guard (:func:`run_deploy`, what the pages and the API call): a run's policy is deployed when
a finished evaluation of its last checkpoint on test days shows the policy as deployed (checked by
simulation) surviving at least as long as do-nothing
(:func:`webapp.training.selectors.deployments.deploy_check`); otherwise only with an override, a written
reason the deployment row and the audit keep. :func:`checkpoint_deploy` is the deploy itself,
without the guard, for tools that install a policy trained elsewhere (``manage.py demo``).
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
from webapp.training.errors import DeployGuardError, RunStateError
from webapp.training.models import Checkpoint, Deployment, Evaluation, TrainingRun
from webapp.training.selectors.deployments import DeployCheck, deploy_check

COMMENT_MAX_LENGTH = 500
OVERRIDE_MIN_LENGTH = 10
"""an override's reason is written words, not a mark: at least this many characters"""
OVERRIDE_MAX_LENGTH = 500
GUARD_ACCEPTED = (
    "a finished evaluation on test days in which the checked policy survives at least as long as "
    f"do-nothing, or an override with a written reason ({OVERRIDE_MIN_LENGTH} to "
    f"{OVERRIDE_MAX_LENGTH} characters)"
)
BEST_NAME = "best.pt"
"""ace_core.checkpoint.BEST_NAME (not imported: it loads torch into the web process)"""


def policy_path(checkpoint_path: Path) -> Path:
    """The policy a run stands for: its ``best.pt`` (the best validated policy) when it sits beside
    the checkpoint, else the checkpoint itself (as :func:`ace_core.checkpoint.policy_file`)."""
    best = Path(checkpoint_path).with_name(BEST_NAME)
    return best if best.is_file() else Path(checkpoint_path)


def _current_locked() -> Deployment | None:
    """The deployment live sessions use now, locked until the transaction ends (a deploy and a
    rollback at the same moment then see each other's row)."""
    return Deployment.objects.select_for_update().order_by("-deployed_at", "-id").first()


def _check_comment(comment: str, name: str = "comment", max_length: int = COMMENT_MAX_LENGTH) -> None:
    if len(comment) > max_length:
        raise RunStateError(f"{name} is {len(comment)} characters long; accepted: at most {max_length}")


@transaction.atomic
def checkpoint_deploy(
    *,
    checkpoint: Checkpoint,
    user: AbstractBaseUser,
    comment: str = "",
    evaluation: Evaluation | None = None,
    override_reason: str = "",
    guard: dict | None = None,
) -> Deployment:
    """Deploy ``checkpoint`` (the last one of a succeeded run), audited; no guard here (see
    :func:`run_deploy`). ``evaluation``, ``override_reason`` and ``guard`` (what the guard found,
    for the audit) are recorded as the guard passed them."""
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
    _check_comment(comment)
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
    previous = _current_locked()
    deployment = Deployment.objects.create(
        checkpoint=checkpoint,
        deployed_by=user,
        deployed_at=timezone.now(),
        comment=comment,
        path=str(target),
        previous=previous,
        evaluation=evaluation,
        override_reason=override_reason,
    )
    after: dict = {"deployed_checkpoint": checkpoint.pk, "path": str(target)}
    if guard is not None:
        after["guard"] = guard
    if override_reason:
        after["override_reason"] = override_reason
    audit_record(
        actor=user,
        action="checkpoint.deploy",
        target=checkpoint,
        before={"deployed_checkpoint": previous.checkpoint_id if previous else None},
        after=after,
        comment=comment,
    )
    return deployment


def _guard_record(check: DeployCheck) -> dict:
    """What the guard found, as the audit keeps it: the evaluation read and its figures."""
    outcome = check.outcome
    record: dict = {"passed": check.passed, "refusal": check.refusal, "evaluation": None}
    if outcome is not None:
        record.update(
            evaluation=outcome.evaluation.pk,
            policy=outcome.agent,
            survival=outcome.survival,
            do_nothing_survival=outcome.do_nothing,
            episodes=outcome.episodes,
        )
    return record


@transaction.atomic
def run_deploy(
    *,
    run: TrainingRun,
    user: AbstractBaseUser,
    comment: str = "",
    override_reason: str = "",
    checkpoint: Checkpoint | None = None,
) -> Deployment:
    """Deploy the policy of ``run`` (its last checkpoint) through the guard.

    Without a finished evaluation on test days in which the checked policy survives at least as
    long as do-nothing, the deploy needs ``override_reason``, a written reason; else it is refused
    with :class:`DeployGuardError`, naming what is missing, and nothing is written. An override
    given when the guard passes is kept too. ``checkpoint``, when given, is the one the engineer
    confirmed: refused if the run's last checkpoint is another."""
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    latest = run.checkpoints.order_by("-id").first()
    if latest is None:
        raise RunStateError(f"run {run.pk} has no checkpoint to deploy")
    if checkpoint is not None and checkpoint.pk != latest.pk:
        raise RunStateError(
            f"checkpoint at step {checkpoint.step} was overwritten; only the run's last checkpoint "
            f"(step {latest.step}) can be deployed"
        )
    checkpoint = latest
    if run.status != JobStatus.SUCCEEDED:
        raise RunStateError(
            f"run {run.pk} is {run.status}; only checkpoints of succeeded runs can be deployed"
        )
    override_reason = override_reason.strip()
    _check_comment(comment)
    _check_comment(override_reason, "override_reason", OVERRIDE_MAX_LENGTH)
    check = deploy_check(checkpoint=checkpoint)
    if not check.passed:
        if not override_reason:
            raise DeployGuardError(f"deploy refused: {check.refusal}; accepted: {GUARD_ACCEPTED}")
        if len(override_reason) < OVERRIDE_MIN_LENGTH:
            raise DeployGuardError(
                f"deploy refused: {check.refusal}, and the override's reason is {len(override_reason)} "
                f"characters long; accepted: a written reason of {OVERRIDE_MIN_LENGTH} to "
                f"{OVERRIDE_MAX_LENGTH} characters"
            )
    return checkpoint_deploy(
        checkpoint=checkpoint,
        user=user,
        comment=comment,
        evaluation=check.outcome.evaluation if check.outcome is not None else None,
        override_reason=override_reason,
        guard=_guard_record(check),
    )


@transaction.atomic
def deployment_rollback(*, deployment: Deployment, user: AbstractBaseUser, comment: str = "") -> Deployment:
    """Return to the deployment before ``deployment``, which must be the current one (a second
    click on a page shown before the first is refused rather than rolling back twice).

    The rollback is a new deployment serving the frozen copy the earlier one served, with that
    one's guard record; rolling it back in turn returns to the deployment before that one. Audited
    as ``deployment.rollback``."""
    _check_comment(comment)
    current = _current_locked()
    if current is None or current.pk != deployment.pk:
        now = f"deployment {current.pk} is" if current is not None else "nothing is"
        raise RunStateError(
            f"deployment {deployment.pk} is no longer the deployed policy ({now} deployed now); "
            "reload the page and roll back the current deployment if you still mean to"
        )
    restored = (
        Deployment.objects.select_related("checkpoint__run").filter(pk=current.previous_id).first()
        if current.previous_id
        else None
    )
    if restored is None:
        raise RunStateError(
            f"deployment {current.pk} has no deployment before it to roll back to; deploy another run instead"
        )
    if not Path(restored.path).is_file():
        raise RunStateError(
            f"the policy file of deployment {restored.pk} ({restored.path}) is missing on this machine; "
            "it cannot be restored, deploy a run instead"
        )
    rollback = Deployment.objects.create(
        checkpoint=restored.checkpoint,
        deployed_by=user,
        deployed_at=timezone.now(),
        comment=comment,
        path=restored.path,
        previous=restored.previous,
        rollback_of=current,
        evaluation=restored.evaluation,
        override_reason=restored.override_reason,
    )
    audit_record(
        actor=user,
        action="deployment.rollback",
        target=rollback,
        before={"deployment": current.pk, "deployed_checkpoint": current.checkpoint_id},
        after={
            "deployment": rollback.pk,
            "deployed_checkpoint": restored.checkpoint_id,
            "restores": restored.pk,
            "path": restored.path,
        },
        comment=comment,
        target_repr=f"run {restored.checkpoint.run_id} checkpoint at step {restored.checkpoint.step}, "
        f"restored from deployment {restored.pk}",
    )
    return rollback
