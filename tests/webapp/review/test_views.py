"""Reviewers' pages: the queue, a refinement's evidence, decisions (and refusals), shapings."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from ace_core.events import ShapingEvent
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from tests.webapp.conftest import client_for
from webapp.review.evidence import SAFE_AND_BETTER, STILL_UNSAFE, round_answer
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
        answer = round_answer(round_.response)
        assert escape(round_.prompt) in html and escape(answer.text) in html
        # the generated answer comes before the prompt it answers
        section = html[html.index(f'id="round-{round_.number}"') :]
        assert section.index(escape(answer.text)) < section.index(escape(round_.prompt))
    assert 'id="approve"' in html and 'id="reject"' in html


def _diagrams(html: str) -> dict:
    """The action diagrams the page hands its script (json_script ``action-diagrams``)."""
    start = html.index('<script id="action-diagrams" type="application/json">')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(body)


def test_actions_and_rounds_are_in_words_with_a_diagram_of_their_substation(
    reviewer, make_run, make_refinement
):
    refinement = make_refinement(make_run())
    grid = make_env(refinement.run.env, cache_chronics=False)
    try:
        space = build_action_space(grid)
    finally:
        grid.close()
    html = client_for(reviewer).get(_detail_url(refinement)).content.decode()
    assert (
        f'<p class="action-words" id="rl-action">{escape(space.describe(refinement.rl_action_index))}</p>'
        in html
    )
    assert (
        f'<p class="action-words" id="llm-action">{escape(space.describe(refinement.llm_action_index))}</p>'
        in html
    )
    for round_ in refinement.rounds.all():  # each round's action in words, never its index
        row = html[html.index(f'<tr data-round="{round_.number}">') :]
        row = row[: row.index("</tr>")]
        assert f'<td class="round-action">{escape(space.describe(round_.action_index))}</td>' in row
        assert f">{round_.action_index}<" not in row
    diagrams = _diagrams(html)
    for which, index in (("rl", refinement.rl_action_index), ("llm", refinement.llm_action_index)):
        sub, buses = space.bits_of(index)  # the trainer's refinements here are topology actions
        diagram = diagrams[which]
        assert diagram["kind"] == "topology" and diagram["substation"] == space.substation_name(sub)
        assert [e["bus"] for e in diagram["elements"]] == buses.tolist()
        moved = [e["name"] for e in diagram["elements"] if e["bus"] == 2]
        assert all(name in space.describe(index) for name in moved)


def test_the_header_step_is_the_step_of_the_state_shown(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run(), step=200)
    shown = int(refinement.state_text.split()[1])  # "Step 1 (2019-...)": the episode's step
    html = client_for(reviewer).get(_detail_url(refinement)).content.decode()
    assert f'<strong id="state-step">step {shown}</strong> of its episode' in html
    assert "(training step 200)" in html
    assert f"<h2>Grid state at step {shown}</h2>" in html


def test_a_better_but_overloading_llm_action_is_not_called_safe(reviewer, make_run, make_refinement):
    refinement = make_refinement(make_run(), accepted=True)
    client = client_for(reviewer)
    # beats the RL action on reward only, and leaves a line at 199.1 %
    Refinement.objects.filter(pk=refinement.pk).update(
        rl_reward=-1.0, rl_max_rho=2.0, llm_reward=-0.9907, llm_max_rho=1.991
    )
    html = client.get(_detail_url(refinement)).content.decode()
    assert f'<strong id="verdict-words">{STILL_UNSAFE}</strong>' in html
    assert 'class="verdict verdict-warn"' in html and SAFE_AND_BETTER not in html
    assert "accepted by simulation" not in html
    queue = client.get(reverse("review:queue")).content.decode()
    assert f'<span class="verdict-warn">{STILL_UNSAFE}</span>' in queue
    # no overload and a gain (0.3) above the margin: safe and better
    Refinement.objects.filter(pk=refinement.pk).update(
        rl_reward=-0.1, rl_max_rho=1.1, llm_reward=0.2, llm_max_rho=0.8
    )
    html = client.get(_detail_url(refinement)).content.decode()
    assert f'<strong id="verdict-words">{SAFE_AND_BETTER}</strong>' in html
    assert 'class="verdict verdict-ok"' in html and STILL_UNSAFE not in html


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
