"""A reviewer reads a refinement's evidence, approves it, and sees it leave the queue."""

from __future__ import annotations

from tests.browser.conftest import browser, in_thread, log_in
from tests.webapp.conftest import tiny_config, trainer_refinement
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.review.evidence import SAFE_AND_BETTER, STILL_UNSAFE, round_answer
from webapp.review.models import Refinement, RefinementStatus
from webapp.review.services import refinement_record
from webapp.training.services.runs import run_launch

PASSWORD = "reviewer-browser-pass-1"


def test_reviewer_approves_a_refinement_and_it_leaves_the_queue(
    process_env, server, artifacts, tmp_path, trainer_refinements
):
    role_groups_sync()
    user_create_with_role(username="rev", password=PASSWORD, role="reviewer")
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    run = run_launch(config=tiny_config(), launched_by=engineer)
    # two refinements the real trainer reported: one accepted by simulation, one not
    first = refinement_record(run_id=run.pk, event=trainer_refinement(trainer_refinements, 50, accepted=True))
    second = refinement_record(
        run_id=run.pk, event=trainer_refinement(trainer_refinements, 100, accepted=False)
    )
    # the case reviewers met: better than the RL action on reward only, a line left at 199.1 %
    Refinement.objects.filter(pk=first.pk).update(
        rl_reward=-1.0, rl_max_rho=2.0, llm_reward=-0.9907, llm_max_rho=1.991
    )
    first_round = first.rounds.get(number=1)  # the ORM before the browser's event loop
    first_prompt, first_answer = first_round.prompt, round_answer(first_round.response).text

    with browser(tmp_path) as page:
        log_in(page, server, "rev", PASSWORD)
        page.goto(f"{server}/review/")
        rows = page.locator("#queue tbody tr[data-refinement]")
        assert rows.count() == 2
        page.screenshot(path=artifacts / "01-queue.png", full_page=True)

        page.click(f"tr[data-refinement='{first.pk}'] a")
        page.wait_for_url(f"{server}/review/runs/{run.pk}/refinements/{first.pk}/")
        assert page.locator("pre.text").first.text_content() == first.state_text  # the grid in words
        assert page.text_content("#verdict-words") == STILL_UNSAFE  # in amber, never "safe"
        assert SAFE_AND_BETTER not in page.text_content("main")
        assert page.text_content("#llm-action") == first.llm_action_text  # the action in words
        # its substation drawn: plotly traces with the substation's elements on their buses
        page.wait_for_function("document.querySelector('#llm-diagram .main-svg') !== null")
        plotted = page.evaluate(
            """Array.from(document.getElementById('llm-diagram').data)
                 .filter(t => t.name === 'bus 1' || t.name === 'bus 2')
                 .map(t => [t.name, Array.from(t.text)])"""
        )
        on_bus = dict(plotted)
        assert on_bus["bus 2"] and all(name in first.llm_action_text for name in on_bus["bus 2"])
        assert not set(on_bus["bus 1"]) & set(on_bus["bus 2"])
        page.click("#round-1 > summary")
        assert page.is_visible("#round-1 pre.answer")
        assert page.locator("#round-1 pre").first.text_content() == first_answer  # the answer first
        page.click("#round-1 details.prompt > summary")
        assert page.locator("#round-1 details.prompt pre").text_content() == first_prompt
        page.screenshot(path=artifacts / "02-refinement-detail.png", full_page=True)

        page.fill("#id_comment", "Relieves the overloaded line; simulation agrees.")
        page.click("#approve")
        page.wait_for_url(f"{server}/review/")
        assert f"refinement {first.refinement_id} approved" in page.text_content(".messages")
        remaining = page.locator("#queue tbody tr[data-refinement]")
        assert remaining.count() == 1
        assert remaining.first.get_attribute("data-refinement") == str(second.pk)
        page.screenshot(path=artifacts / "03-queue-after-approval.png", full_page=True)

        page.goto(f"{server}/review/?status=approved")
        assert page.locator(f"tr[data-refinement='{first.pk}']").count() == 1
        page.goto(f"{server}/audit/")
        assert "refinement.approve" in page.text_content("#audit")
        page.screenshot(path=artifacts / "04-audit-log.png", full_page=True)

        page.goto(f"{server}/review/shapings/")
        page.screenshot(path=artifacts / "05-shapings.png", full_page=True)

    approved = in_thread(lambda: Refinement.objects.get(pk=first.pk))
    assert approved.status == RefinementStatus.APPROVED and approved.decided_by.username == "rev"
