"""The example client in docs/ against a running server: it follows a session fed by the real
feed worker and accepts the top recommendation, which the database then holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.webapp.operations.conftest import run_feed
from webapp.operations.models import Decision, DecisionKind

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db(transaction=True)
def test_the_example_client_accepts_the_top_recommendation(live_server, operator, make_session, make_token):
    session = make_session()
    run_feed(session, 2)
    session.refresh_from_db()
    top = session.recommendations.filter(step=session.current_step, error="").order_by("rank").first()
    out = subprocess.run(
        [sys.executable, "docs/api_client.py", "--url", live_server.url, "--token", make_token(operator)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"following session {session.pk}" in out.stdout and "accepted: decision" in out.stdout
    decision = Decision.objects.get(session=session)
    assert (decision.kind, decision.recommendation_id, decision.step) == (
        DecisionKind.ACCEPT,
        top.pk,
        session.current_step,
    )
    assert decision.comment == "accepted by the example client"
