"""A reviewer reads a refinement's evidence, approves it, and sees it leave the queue."""

from __future__ import annotations

from tests.browser.conftest import browser, in_thread, log_in
from tests.webapp.conftest import tiny_config, trainer_refinement
from webapp.accounts.services import role_groups_sync, user_create_with_role
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
    first_prompt = first.rounds.get(number=1).prompt  # the ORM before the browser's event loop

    with browser(tmp_path) as page:
        log_in(page, server, "rev", PASSWORD)
        page.goto(f"{server}/review/")
        rows = page.locator("#queue tbody tr[data-refinement]")
        assert rows.count() == 2
        page.screenshot(path=artifacts / "01-queue.png", full_page=True)

        page.click(f"tr[data-refinement='{first.pk}'] a")
        page.wait_for_url(f"{server}/review/runs/{run.pk}/refinements/{first.pk}/")
        assert page.locator("pre.text").first.text_content() == first.state_text  # the grid in words
        page.click("#round-1 summary")
        assert page.is_visible("#round-1 pre")
        assert page.locator("#round-1 pre").first.text_content() == first_prompt
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
