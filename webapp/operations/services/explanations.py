"""Explanations of recommendations, grounded in their simulation: asked by an operator, the card's
simulated facts are written at once (:func:`ace_core.recommend.explain.facts`); a language model's
text follows from the ``explain`` queue's task (never on the feed's path), labelled as generated
and checked figure by figure against the simulation. Shown to every console of the session."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from ace_core.recommend.explain import facts, figure_mismatches
from webapp.operations.errors import OperationsError
from webapp.operations.models import ExplanationStatus, LiveRecommendation
from webapp.operations.services.common import locked_session, session_changed
from webapp.operations.tasks import explain_recommendation

CARD_HEADLINE = (
    "description",
    "confidence",
    "max_rho_before",
    "max_rho_after",
    "lines_relieved",
    "new_overloads",
    "error",
)


def recommendation_card(rec: LiveRecommendation) -> dict[str, Any]:
    """The card as the pipeline gave it (``Candidate.to_json``'s keys): its headline figures and
    the rest of its ``figures``, and the step they are for."""
    return {**(rec.figures or {}), **{key: getattr(rec, key) for key in CARD_HEADLINE}, "step": rec.step}


def recommendation_facts(rec: LiveRecommendation, card: dict[str, Any] | None = None) -> str:
    """The simulation's findings for the card (or for ``card``, a snapshot of it) in sentences,
    lines by their one name, with the step the figures are for."""
    layout_lines = (rec.session.layout or {}).get("lines") or []
    names = [line.get("name", f"line {i}") for i, line in enumerate(layout_lines)]
    card = card or recommendation_card(rec)
    return f"At step {card.get('step', rec.step)}: " + facts(card, names)


@transaction.atomic
def explanation_request(
    *, session_id: int, recommendation_id: int, user: AbstractBaseUser
) -> LiveRecommendation:
    """Write the card's simulated facts and queue a language model's explanation (the ``explain``
    queue; never on the feed's path)."""
    session = locked_session(session_id)
    rec = LiveRecommendation.objects.filter(pk=recommendation_id, session=session).first()
    if rec is None:
        raise OperationsError(f"recommendation {recommendation_id} is not one of session {session.pk}'s")
    if rec.explanation_status in (ExplanationStatus.PENDING, ExplanationStatus.READY):
        return rec  # asked already: the answer comes (or came) to every console
    rec.explanation_status = ExplanationStatus.PENDING
    rec.explanation_facts = recommendation_facts(rec)
    rec.save(update_fields=["explanation_status", "explanation_facts"])
    session_changed(session)
    transaction.on_commit(lambda: explain_recommendation.enqueue(recommendation_id=rec.pk))
    return rec


@transaction.atomic
def explanation_record(
    *,
    recommendation_id: int,
    text: str,
    model: str,
    failed: bool = False,
    card: dict[str, Any] | None = None,
) -> LiveRecommendation:
    """Record a language model's explanation (or why it failed), the facts of the card it was
    given (``card``: the snapshot it saw; the card as it is now by default), and every figure of
    its text that disagrees with them."""
    rec = LiveRecommendation.objects.select_related("session").get(pk=recommendation_id)
    session = locked_session(rec.session_id)
    card = card or recommendation_card(rec)
    rec.explanation = text
    rec.explanation_model = model
    rec.explanation_status = ExplanationStatus.FAILED if failed else ExplanationStatus.READY
    rec.explanation_facts = recommendation_facts(rec, card)
    rec.explanation_flags = [] if failed else figure_mismatches(text, card)
    rec.save(
        update_fields=[
            "explanation",
            "explanation_model",
            "explanation_status",
            "explanation_facts",
            "explanation_flags",
        ]
    )
    session_changed(session)
    return rec
