"""Reviewers' pages: the queue, a refinement's evidence, decisions (and refusals), shapings."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from ace_core.events import ShapingEvent
from tests.webapp.conftest import client_for
from webapp.review.models import COMMENT_MAX_LENGTH, Refinement, RefinementStatus
from webapp.review.services import shaping_record

pytestmark = pytest.mark.django_db


def _detail_url(refinement) -> str:
    return reverse("review:refinement_detail", args=[refinement.run_id, refinement.pk])


def _decide_url(run_id: int, refinement) -> str:
    return reverse("review:refinement_decide", args=[run_id, refinement.pk])


def test_queue_lists_pending_refinements_and_filters(reviewer, make_run, make_refinement):
    run = make_run()
    accepted = make_refinement(run, step=100, accepted=True)
    refused = make_refinement(run, step=50, accepted=False)
    client = client_for(reviewer)
    page = client.get(reverse("review:queue"))
    assert list(page.context["page"]) == [refused, accepted]
    filtered = client.get(
        reverse("review:queue"), {"status": "pending", "run": run.pk, "simulation": "accepted"}
    )
    assert list(filtered.context["page"]) == [accepted]
    bad = client.get(reverse("review:queue"), {"status": "sideways"}, follow=True)
    assert "some filters were not valid and were ignored" in bad.content.decode()


def test_detail_shows_the_state_both_actions_and_every_round(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run())
    html = client_for(reviewer).get(_detail_url(refinement)).content.decode()
    assert escape(refinement.state_text) in html  # the state in words
    assert escape(refinement.rl_action_text) in html and escape(refinement.llm_action_text) in html
    rounds = list(refinement.rounds.all())
    assert len(rounds) > 1 and f"Rounds ({len(rounds)})" in html
    for round_ in rounds:  # the trainer's prompt and the model's answer, round after round
        assert f'id="round-{round_.number}"' in html
        assert escape(round_.prompt) in html and escape(round_.response) in html
    assert 'id="approve"' in html and 'id="reject"' in html


def test_outcomes_are_in_the_operators_words(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run())
    client = client_for(reviewer)
    Refinement.objects.filter(pk=refinement.pk).update(rl_max_rho=0.875)
    html = client.get(_detail_url(refinement)).content.decode()
    assert '<dd class="outcome" id="rl-outcome">max rho 87.5%</dd>' in html
    # the trainer records -1 when a simulation gave no max rho: a game over, never "-1.000"
    Refinement.objects.filter(pk=refinement.pk).update(rl_max_rho=-1.0)
    refinement.rounds.filter(number=1).update(simulated_max_rho=None, error="illegal action")
    html = client.get(_detail_url(refinement)).content.decode()
    assert '<dd class="outcome" id="rl-outcome">game over in simulation</dd>' in html
    assert "max rho -" not in html and "not allowed now" in html


def test_both_actions_carry_their_n1_worst_case(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run(), accepted=True)
    # an action accepted by simulation leads to a grid: the trainer screened it for N-1
    assert (
        refinement.llm_n1.startswith(("N-1 secure", "not N-1 secure"))
        and "worst: losing " in refinement.llm_n1
    )
    html = client_for(reviewer).get(_detail_url(refinement)).content.decode()
    assert f'<dd id="llm-n1">{escape(refinement.llm_n1)}</dd>' in html
    if refinement.rl_max_rho >= 0:
        assert refinement.rl_n1 and f'<dd id="rl-n1">{escape(refinement.rl_n1)}</dd>' in html
    else:  # a game over leaves no grid to screen
        assert refinement.rl_n1 == "" and '<dd id="rl-n1">not screened</dd>' in html


def test_approve_removes_it_from_the_queue_and_a_second_decision_is_refused(
    reviewer, make_run, make_refinement
):
    refinement = make_refinement(make_run())
    client = client_for(reviewer)
    response = client.post(
        _decide_url(refinement.run_id, refinement), {"decision": "approve", "comment": "ok"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("review:queue")
    assert list(client.get(reverse("review:queue")).context["page"]) == []
    again = client.post(_decide_url(refinement.run_id, refinement), {"decision": "reject"})
    assert again.status_code == 409
    assert "was already approved by" in again.content.decode()
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.APPROVED and refinement.decision_comment == "ok"


def test_a_decision_through_another_runs_url_is_refused(reviewer, make_run, make_refinement):
    run, other = make_run(), make_run()
    refinement = make_refinement(run)
    response = client_for(reviewer).post(_decide_url(other.pk, refinement), {"decision": "approve"})
    assert response.status_code == 409
    assert f"belongs to run {run.pk}, not run {other.pk}" in response.content.decode()
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.PENDING
    assert (
        client_for(reviewer)
        .get(reverse("review:refinement_detail", args=[other.pk, refinement.pk]))
        .status_code
        == 404
    )


def test_an_oversized_comment_or_unknown_decision_is_refused(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run())
    client = client_for(reviewer)
    response = client.post(
        _decide_url(refinement.run_id, refinement),
        {"decision": "approve", "comment": "x" * (COMMENT_MAX_LENGTH + 5)},
    )
    assert response.status_code == 400
    assert f"Ensure this value has at most {COMMENT_MAX_LENGTH} characters" in response.content.decode()
    response = client.post(_decide_url(refinement.run_id, refinement), {"decision": "shrug"})
    assert response.status_code == 400 and "shrug is not a decision" in response.content.decode()
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.PENDING


def test_forged_decision_without_csrf_token_is_refused(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run())
    client = client_for(reviewer, enforce_csrf_checks=True)
    response = client.post(_decide_url(refinement.run_id, refinement), {"decision": "approve"})
    assert response.status_code == 403
    refinement.refresh_from_db()
    assert refinement.status == RefinementStatus.PENDING


def test_shapings_are_listed_with_their_rationale(reviewer, make_run):
    run = make_run()
    shaping_record(
        run_id=run.pk,
        event=ShapingEvent(
            step=200,
            episode_index=1,
            trajectory_step=4,
            adjustment=-0.2,
            rationale="Acting late overloaded line 7.",
            model="m",
        ),
    )
    html = client_for(reviewer).get(reverse("review:shaping_list"), {"run": run.pk}).content.decode()
    assert "Acting late overloaded line 7." in html and "-0.2" in html


def test_admin_bulk_approve_skips_decided_ones(reviewer, make_run, make_refinement):
    run = make_run()
    first, second = make_refinement(run, step=50), make_refinement(run, step=100)
    client = client_for(reviewer)
    client.post(_decide_url(run.pk, first), {"decision": "reject"})
    response = client.post(
        reverse("admin:review_refinement_changelist"),
        {"action": "approve_selected", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )
    html = response.content.decode()
    assert "1 refinement(s) approved" in html and "was already rejected" in html
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (RefinementStatus.REJECTED, RefinementStatus.APPROVED)


def test_shapings_and_queue_filters_refuse_non_ascii_and_huge_run_ids(reviewer):
    client = client_for(reviewer)
    for value in ("²", "١٢", str(10**30), "-1", "9" * 5000):
        response = client.get(reverse("review:shaping_list"), {"run": value})
        assert response.status_code == 200, value
        assert "is not a run id (digits 0-9); showing all runs" in response.content.decode(), value
        queue = client.get(reverse("review:queue"), {"run": value})
        assert queue.status_code == 200 and "some filters were not valid" in queue.content.decode(), value
