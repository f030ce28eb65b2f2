"""Fixtures for the live console: a deployed policy (random weights, the real loading code), a
session of l2rpn_case14_sandbox, and a feed worker run for a few steps in the test's thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ace_core.live import untrained_policy
from webapp.jobs.models import JobStatus
from webapp.operations.models import LiveSession
from webapp.operations.services import session_start, sessions_claim
from webapp.operations.worker.feed import SessionFeed
from webapp.training.models import Checkpoint
from webapp.training.services.deployment import checkpoint_deploy

ENV = "l2rpn_case14_sandbox"
SCENARIO = 0
"""a scenario whose first steps have two recommendations: in some scenarios' calm first steps every
candidate is worse than doing nothing, and the pipeline rightly recommends none"""


@pytest.fixture(scope="session")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return untrained_policy(ENV, tmp_path_factory.mktemp("policy") / "checkpoint.pt", hidden=32)


@pytest.fixture
def deployment(make_run: Callable, engineer: Any, policy_file: Path) -> Any:
    run = make_run(env=ENV)
    run.status = JobStatus.SUCCEEDED
    run.save(update_fields=["status"])
    checkpoint = Checkpoint.objects.create(run=run, step=300, path=str(policy_file))
    return checkpoint_deploy(checkpoint=checkpoint, user=engineer)


@pytest.fixture
def make_session(deployment: Any, engineer: Any) -> Callable[..., LiveSession]:
    def make(**overrides: Any) -> LiveSession:
        options = {"scenario_index": SCENARIO, "seed": 0, "k": 3, "speed_seconds": 0.0, **overrides}
        return session_start(user=engineer, **options)

    return make


def run_feed(session: LiveSession, steps: int, token: str = "worker-a") -> SessionFeed:
    """Claim ``session`` for worker ``token`` (if nobody owns it) and play ``steps`` steps."""
    sessions_claim(worker_token=token)
    feed = SessionFeed(session_id=session.pk, worker_token=token, publisher=None)
    feed.run(max_steps=steps)
    return feed
