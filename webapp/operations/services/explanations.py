"""LLM explanations of recommendations: asked by an operator, written by the ``explain`` queue's
task (never on the feed's path), shown to every console of the session."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.operations.errors import OperationsError
from webapp.operations.models import ExplanationStatus, LiveRecommendation
from webapp.operations.services.common import locked_session, session_changed
from webapp.operations.tasks import explain_recommendation


@transaction.atomic
def explanation_request(
    *, session_id: int, recommendation_id: int, user: AbstractBaseUser
) -> LiveRecommendation:
    """Queue an LLM explanation of a recommendation (the ``explain`` queue; never on the feed's path)."""
    session = locked_session(session_id)
    rec = LiveRecommendation.objects.filter(pk=recommendation_id, session=session).first()
    if rec is None:
        raise OperationsError(f"recommendation {recommendation_id} is not one of session {session.pk}'s")
    if rec.explanation_status in (ExplanationStatus.PENDING, ExplanationStatus.READY):
        return rec  # asked already: the answer comes (or came) to every console
    rec.explanation_status = ExplanationStatus.PENDING
    rec.save(update_fields=["explanation_status"])
    session_changed(session)
    transaction.on_commit(lambda: explain_recommendation.enqueue(recommendation_id=rec.pk))
    return rec


@transaction.atomic
def explanation_record(
    *, recommendation_id: int, text: str, model: str, failed: bool = False
) -> LiveRecommendation:
    rec = LiveRecommendation.objects.select_related("session").get(pk=recommendation_id)
    session = locked_session(rec.session_id)
    rec.explanation = text
    rec.explanation_model = model
    rec.explanation_status = ExplanationStatus.FAILED if failed else ExplanationStatus.READY
    rec.save(update_fields=["explanation", "explanation_model", "explanation_status"])
    session_changed(session)
    return rec
