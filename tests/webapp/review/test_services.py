"""Recording refinements and shapings, and reviewers' decisions: atomic, audited, final."""

from __future__ import annotations

import pytest
from django.db import connection

from ace_core.events import ShapingEvent
from tests.webapp.conftest import trainer_refinement
from webapp.audit.models import AuditEntry
from webapp.review.errors import DecisionError
from webapp.review.models import COMMENT_MAX_LENGTH, Refinement, RefinementRound, RefinementStatus
from webapp.review.selectors import refinement_decision
from webapp.review.services import refinement_decide, refinement_record, shaping_record

pytestmark = pytest.mark.django_db


def test_a_refinement_is_stored_with_every_round(make_run, trainer_refinements):
    run = make_run()
    event = trainer_refinement(trainer_refinements, 50)  # accepted in its last round
    refinement = refinement_record(run_id=run.pk, event=event)
    assert refinement.status == RefinementStatus.PENDING
    assert (refinement.refinement_id, refinement.step) == ("r00050", 50)
    assert refinement.accepted_by_simulation and refinement.llm_action_index == event.llm_action_index
    for field in ("state_text", "rl_action_text", "llm_action_text", "rl_reward", "llm_reward", "model"):
        assert getattr(refinement, field) == getattr(event, field), field
    stored = [
        (r.number, r.action_index, r.accepted, r.prompt, r.response, r.error) for r in refinement.rounds.all()
    ]
    assert stored == [
        (number, r.action_index, r.accepted, r.prompt, r.response, r.error)
        for number, r in enumerate(event.rounds, start=1)
    ]
    assert len(stored) > 1 and stored[-1][1] == event.llm_action_index and stored[-1][2]


def test_a_refinement_reported_again_is_not_duplicated(make_run, trainer_refinements):
    run = make_run()
    event = trainer_refinement(trainer_refinements, 50)
    first = refinement_record(run_id=run.pk, event=event)
    again = refinement_record(run_id=run.pk, event=event)
    assert first.pk == again.pk
    assert Refinement.objects.count() == 1 and RefinementRound.objects.count() == len(event.rounds)


def test_a_shaping_is_stored_with_its_rationale(make_run):
    run = make_run()
    shaping = shaping_record(
        run_id=run.pk,
        event=ShapingEvent(
            step=10, episode_index=0, trajectory_step=3, adjustment=-0.2, rationale="late", model="m"
        ),
    )
    assert (shaping.adjustment, shaping.rationale) == (-0.2, "late")


def test_approve_records_who_when_and_the_audit_entry(make_run, make_refinement, reviewer):
    run = make_run()
    refinement = make_refinement(run)
    decided = refinement_decide(
        refinement=refinement, run=run, reviewer=reviewer, decision="approve", comment="sound"
    )
    assert (
        decided.status == RefinementStatus.APPROVED and decided.decided_by == reviewer and decided.decided_at
    )
    entry = AuditEntry.objects.get(action="refinement.approve")
    assert (entry.actor, entry.before, entry.after["status"], entry.comment) == (
        reviewer,
        {"status": "pending"},
        "approved",
        "sound",
    )
    assert refinement_decision(run_id=run.pk, refinement_id=refinement.refinement_id) is True


def test_a_second_decision_is_refused_and_changes_nothing(make_run, make_refinement, reviewer, make_user):
    run = make_run()
    refinement = make_refinement(run)
    refinement_decide(refinement=refinement, run=run, reviewer=reviewer, decision="reject")
    other = make_user("reviewer")
    with pytest.raises(
        DecisionError, match=f"was already rejected by {reviewer.username} at .* decisions are final"
    ):
        refinement_decide(refinement=refinement, run=run, reviewer=other, decision="approve")
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.REJECTED and refinement.decided_by == reviewer
    assert AuditEntry.objects.filter(action__startswith="refinement.").count() == 1
    assert refinement_decision(run_id=run.pk, refinement_id=refinement.refinement_id) is False


def test_a_decision_through_another_run_is_refused(make_run, make_refinement, reviewer):
    run, other_run = make_run(), make_run()
    refinement = make_refinement(run)
    with pytest.raises(DecisionError, match=f"belongs to run {run.pk}, not run {other_run.pk}"):
        refinement_decide(refinement=refinement, run=other_run, reviewer=reviewer, decision="approve")
    assert Refinement.objects.get(pk=refinement.pk).status == RefinementStatus.PENDING


@pytest.mark.parametrize(
    ("decision", "comment", "message"),
    [
        ("maybe", "", "decision 'maybe' is not accepted; choose one of: approve, reject"),
        (
            "approve",
            "x" * (COMMENT_MAX_LENGTH + 1),
            f"comment is {COMMENT_MAX_LENGTH + 1} characters long; accepted: at most {COMMENT_MAX_LENGTH}",
        ),
    ],
)
def test_bad_decisions_are_refused(make_run, make_refinement, reviewer, decision, comment, message):
    run = make_run()
    refinement = make_refinement(run)
    with pytest.raises(DecisionError, match=message):
        refinement_decide(
            refinement=refinement, run=run, reviewer=reviewer, decision=decision, comment=comment
        )
    assert Refinement.objects.get(pk=refinement.pk).status == RefinementStatus.PENDING
    assert not AuditEntry.objects.filter(action__startswith="refinement.").exists()


def test_an_audit_failure_rolls_the_decision_back(make_run, make_refinement, reviewer, monkeypatch):
    run = make_run()
    refinement = make_refinement(run)

    def broken_audit(**kwargs):
        raise RuntimeError("audit storage unavailable")

    monkeypatch.setattr("webapp.review.services.audit_record", broken_audit)
    with pytest.raises(RuntimeError):
        refinement_decide(refinement=refinement, run=run, reviewer=reviewer, decision="approve")
    assert Refinement.objects.get(pk=refinement.pk).status == RefinementStatus.PENDING


def test_pending_or_unknown_refinements_are_not_decided_for_the_trainer(make_run, make_refinement):
    run = make_run()
    refinement = make_refinement(run)
    assert refinement_decision(run_id=run.pk, refinement_id=refinement.refinement_id) is None
    assert refinement_decision(run_id=run.pk, refinement_id="never-reported") is None


def test_the_database_refuses_to_change_the_audit_log(make_run, make_refinement, reviewer):
    if connection.vendor != "postgresql":
        pytest.skip("the append-only trigger exists on Postgres")
    run = make_run()
    refinement_decide(refinement=make_refinement(run), run=run, reviewer=reviewer, decision="approve")
    from django.db import DatabaseError, transaction

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.update(comment="rewritten")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.all().delete()


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_once_only_one_wins(make_run, make_refinement, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need Postgres")
    import threading

    from django.db import connections

    run = make_run()
    refinement = make_refinement(run)
    reviewers = [make_user("reviewer"), make_user("reviewer")]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(reviewer, decision: str) -> None:
        barrier.wait()
        try:
            refinement_decide(refinement=refinement, run=run, reviewer=reviewer, decision=decision)
            outcomes.append("decided")
        except DecisionError as error:
            outcomes.append(" ".join(error.messages))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=decide, args=(r, d)) for r, d in zip(reviewers, ["approve", "reject"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes)[0] == "decided" and "decisions are final" in sorted(outcomes)[1]
    assert AuditEntry.objects.filter(action__startswith="refinement.").count() == 1
