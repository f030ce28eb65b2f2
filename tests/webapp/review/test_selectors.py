"""The review queue's filters and order."""

from __future__ import annotations

import pytest

from webapp.review.selectors import refinement_counts, refinement_get, refinement_queue, shaping_list
from webapp.review.services import refinement_decide

pytestmark = pytest.mark.django_db


def test_queue_filters_by_status_run_and_simulation(make_run, make_refinement, reviewer):
    run, other = make_run(), make_run()
    accepted = make_refinement(run, step=100, accepted=True)
    refused = make_refinement(run, step=50, accepted=False)
    elsewhere = make_refinement(other, step=10)
    refinement_decide(refinement=elsewhere, run=other, reviewer=reviewer, decision="approve")

    assert list(refinement_queue()) == [refused, accepted]  # pending, oldest step first
    assert list(refinement_queue(simulation="accepted")) == [accepted]
    assert list(refinement_queue(simulation="not_accepted")) == [refused]
    assert list(refinement_queue(status="approved")) == [elsewhere]
    assert list(refinement_queue(status="all", run_id=other.pk)) == [elsewhere]
    assert list(refinement_queue(status="rejected")) == []
    assert refinement_counts() == {"pending": 2, "approved": 1, "rejected": 0}


def test_refinement_get_is_scoped_to_its_run(make_run, make_refinement):
    run, other = make_run(), make_run()
    refinement = make_refinement(run)
    assert refinement_get(run_id=run.pk, pk=refinement.pk) == refinement
    assert refinement_get(run_id=other.pk, pk=refinement.pk) is None


def test_shapings_filter_by_run(make_run):
    from ace_core.events import ShapingEvent
    from webapp.review.services import shaping_record

    run, other = make_run(), make_run()
    event = ShapingEvent(step=1, episode_index=0, trajectory_step=0, adjustment=0.1, rationale="r", model="m")
    mine = shaping_record(run_id=run.pk, event=event)
    shaping_record(run_id=other.pk, event=event)
    assert list(shaping_list(run_id=run.pk)) == [mine]
    assert shaping_list().count() == 2
