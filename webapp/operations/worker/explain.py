"""An LLM explanation of a recommendation, as the ``explain_recommendation`` task runs it inside
``db_worker --queue-name explain``: kept off the feed's fast path so a recommendation never waits
for a language model. The model is given the card's simulated facts, and what it writes is
recorded beside them, its figures checked against the simulation's.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from django.conf import settings

from ace_core.live import explain_messages
from webapp.operations.models import LiveRecommendation, SessionStep
from webapp.operations.services import explanation_record
from webapp.operations.services.explanations import recommendation_card, recommendation_facts

logger = logging.getLogger(__name__)

_backends: dict[str, Any] = {}
_lock = threading.Lock()


def explain_backend() -> Any:
    """The configured LLM, loaded once per worker process."""
    from ace_core.llm.factory import make_backend

    key = json.dumps(
        [
            settings.GRIDACE_EXPLAIN_LLM,
            settings.GRIDACE_EXPLAIN_LLM_MODEL,
            settings.GRIDACE_EXPLAIN_LLM_OPTIONS,
        ],
        sort_keys=True,
    )
    with _lock:
        if key not in _backends:
            _backends[key] = make_backend(
                settings.GRIDACE_EXPLAIN_LLM,
                settings.GRIDACE_EXPLAIN_LLM_MODEL,
                **settings.GRIDACE_EXPLAIN_LLM_OPTIONS,
            )
        return _backends[key]


def explain(*, recommendation_id: int) -> dict[str, Any]:
    """Ask the LLM about the recommendation and record its answer (or why it failed) with the facts
    it was given; returns the task's result."""
    rec = LiveRecommendation.objects.select_related("session").get(pk=recommendation_id)
    row = SessionStep.objects.filter(session_id=rec.session_id, step=rec.step).first()
    # the card as it is now: the model is told its facts, and its figures are checked against them
    card = recommendation_card(rec)
    prompt_card = {
        "description": rec.description,
        "source": rec.source,
        "max_rho_after": rec.max_rho_after,
        "facts": recommendation_facts(rec, card),
    }
    try:
        backend = explain_backend()
        text = backend.chat(
            explain_messages(state_text=row.text if row else "", card=prompt_card),
            max_new_tokens=settings.GRIDACE_EXPLAIN_MAX_TOKENS,
        )
        model = backend.name
    except Exception as error:  # the console shows why; the recommendation itself is unaffected
        logger.exception("explaining recommendation %s failed", recommendation_id)
        explanation_record(
            recommendation_id=recommendation_id,
            text=f"{type(error).__name__}: {error}",
            model="",
            failed=True,
            card=card,
        )
        return {"recommendation": recommendation_id, "failed": True}
    explanation_record(
        recommendation_id=recommendation_id,
        text=text or "(the model gave no answer)",
        model=model,
        card=card,
    )
    return {"recommendation": recommendation_id, "model": model}
