"""Explanations grounded in the simulation: asking writes a real card's simulated facts at once
(lines by their one name); a language model's text is recorded beside them, labelled by the model
that wrote it, with each figure it quotes that disagrees with the simulation flagged."""

from __future__ import annotations

import pytest

from ace_core.recommend.explain import facts, simulated_figures
from tests.webapp.operations.conftest import run_feed
from webapp.live.session_messages import recommendation_dict
from webapp.operations.errors import OperationsError
from webapp.operations.models import LiveRecommendation
from webapp.operations.services import explanation_record, explanation_request
from webapp.operations.services.explanations import recommendation_card

pytestmark = pytest.mark.django_db


def _first_card(session) -> LiveRecommendation:
    run_feed(session, 1)
    rec = LiveRecommendation.objects.filter(session=session).order_by("step", "rank").first()
    assert rec is not None, "the scenario's first step has no card"
    return rec


def test_asking_writes_the_facts_of_a_real_card_at_once(make_session, operator):
    session = make_session()
    rec = _first_card(session)
    explanation_request(session_id=session.pk, recommendation_id=rec.pk, user=operator)
    rec.refresh_from_db()
    session.refresh_from_db()
    names = [line["name"] for line in session.layout["lines"]]
    card = recommendation_card(rec)
    assert rec.explanation_status == "pending" and not rec.explanation  # the model's text comes later
    assert rec.explanation_facts == f"At step {rec.step}: " + facts(card, names)
    text = rec.explanation_facts
    assert f"from {rec.max_rho_before:.1%} to {rec.max_rho_after:.1%}" in text
    for line in rec.lines_relieved:
        assert f"relieves {names[line]}" in text
    worst = rec.figures["n1"]["worst"]
    assert f"losing {worst['outage_name']} loads {worst['worst_line_name']} at {worst['max_rho']:.1%}" in text
    assert "Looked ahead" in text and f"Ranked {rec.figures['rank_reason']}." in text
    raw = [line["raw"] for line in session.layout["lines"] if line.get("raw")]
    assert raw and not any(name in text for name in raw)  # one name per line, never grid2op's
    # every console receives them with the card
    assert recommendation_dict(rec)["explanation_facts"] == text


def test_a_figure_the_model_quotes_that_disagrees_with_the_simulation_is_flagged(make_session):
    session = make_session()
    rec = _first_card(session)
    card = recommendation_card(rec)
    simulated = simulated_figures(card)
    wrong = next(p for p in range(50, 100) if all(abs(p / 100 - value) >= 0.02 for _, value in simulated))
    label, nearest = min(simulated, key=lambda item: abs(item[1] - wrong / 100))
    text = (
        f"It brings the highest load to {rec.max_rho_after * 100:.1f}%, reducing the load on the line, "
        f"which is expected to be {wrong}% of the total load."
    )
    explanation_record(recommendation_id=rec.pk, text=text, model="SmolLM2-135M-Instruct")
    rec.refresh_from_db()
    assert (rec.explanation_status, rec.explanation, rec.explanation_model) == (
        "ready",
        text,
        "SmolLM2-135M-Instruct",
    )
    assert rec.explanation_flags == [
        f"does not match the simulation: {wrong}% (simulated {nearest:.1%}, {label})"
    ]
    assert rec.explanation_facts.startswith(f"At step {rec.step}: Simulated one step ahead")
    message = recommendation_dict(rec)
    assert message["explanation_flags"] == rec.explanation_flags and message["explanation_model"]


def test_a_failed_explanation_flags_nothing_and_keeps_the_facts(make_session):
    session = make_session()
    rec = _first_card(session)
    explanation_record(recommendation_id=rec.pk, text="TimeoutError: 30 s", model="", failed=True)
    rec.refresh_from_db()
    assert rec.explanation_status == "failed" and rec.explanation_flags == []
    assert rec.explanation_facts.startswith(f"At step {rec.step}: ")


def test_explaining_a_card_of_another_session_is_refused_and_changes_nothing(make_session, operator):
    first, second = make_session(), make_session()
    rec = _first_card(first)
    with pytest.raises(OperationsError, match=f"recommendation {rec.pk} is not one of session {second.pk}'s"):
        explanation_request(session_id=second.pk, recommendation_id=rec.pk, user=operator)
    rec.refresh_from_db()
    assert (rec.explanation_status, rec.explanation_facts) == ("", "")
