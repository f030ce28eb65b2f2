"""Cooldowns through the console's endpoints: after an operator's split is played, another action
at that substation (or switching that line again) is refused by the what-if panel and by Apply,
with the number of steps left, and nothing is written.

The bundled 14-bus grids have no cooldown, so this runs a session of l2rpn_wcci_2020 (36
substations; grid2op's own rules: 3 steps of cooldown per substation and per line)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from ace_core.live import make_live_env, release_env, untrained_policy
from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.operations import mirror
from webapp.operations.errors import OperationsError
from webapp.operations.models import Decision, LiveRecommendation, LiveSession, SessionStep
from webapp.operations.services import action_apply, session_start
from webapp.training.models import Checkpoint
from webapp.training.services.deployment import checkpoint_deploy

pytestmark = pytest.mark.django_db

WCCI = "l2rpn_wcci_2020"
COOLDOWN = 3


@pytest.fixture(scope="module")
def wcci_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = make_live_env(WCCI)
    assert env.parameters.NB_TIMESTEP_COOLDOWN_SUB == env.parameters.NB_TIMESTEP_COOLDOWN_LINE == COOLDOWN
    path = untrained_policy(
        WCCI, tmp_path_factory.mktemp("wcci-policy") / "checkpoint.pt", hidden=32, env=env
    )
    release_env(WCCI, env)  # the feed's grid takes it from the pool (making one costs seconds)
    return path


@pytest.fixture
def wcci_session(make_run: Callable, engineer: Any, wcci_policy: Path) -> Iterator[LiveSession]:
    run = make_run(env=WCCI)
    run.status = JobStatus.SUCCEEDED
    run.save(update_fields=["status"])
    checkpoint_deploy(
        checkpoint=Checkpoint.objects.create(run=run, step=100, path=str(wcci_policy)), user=engineer
    )
    session = session_start(user=engineer, scenario_index=0, speed_seconds=0.0)
    yield session
    mirror.forget(session)  # hands the web process's grid back to the pool


def _post(client, url: str, body: dict) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _written(session: LiveSession) -> tuple:
    """Everything a refused decision must leave as it was."""
    session.refresh_from_db()
    return (
        Decision.objects.filter(session=session).count(),
        AuditEntry.objects.count(),
        session.revision,
        session.current_step,
        list(LiveRecommendation.objects.filter(session=session).values_list("status", flat=True)),
    )


def _first_safe(client, url: str, step: int, actions: list[dict]) -> dict:
    """The first of ``actions`` the what-if panel finds legal and free of overloads."""
    for action in actions:
        outcome = _post(client, url, {"step": step, "action": action}).json()["what_if"]
        if outcome["legal"] and outcome["max_rho_after"] < 1.0:
            return action
    raise AssertionError("no safe action among the candidates")


def test_what_if_and_apply_refuse_a_substation_or_line_in_cooldown_and_write_nothing(wcci_session, operator):
    session = wcci_session
    run_feed(session, 1)
    session.refresh_from_db()
    client = client_for(operator)
    what_if_url = reverse("operations:what_if", args=[session.pk])
    apply_url = reverse("operations:apply", args=[session.pk])

    # an operator splits a substation (two of its lines to bus 2); the worker plays it at step 2
    splits = []
    for sub in session.layout["substations"]:
        lines = [j for j, label in enumerate(sub["elements"]) if label.startswith("line ")]
        if len(sub["elements"]) >= 5 and len(lines) >= 3:
            splits.append(
                {"kind": "topology", "substation": sub["id"], "set": [[lines[0], 2], [lines[1], 2]]}
            )
    split = _first_safe(client, what_if_url, 1, splits)
    sub = split["substation"]
    assert _post(client, apply_url, {"step": 1, "action": split}).status_code == 200
    run_feed(session, 1)
    row = SessionStep.objects.get(session=session, step=2)
    assert row.applied_action == split and row.state["cooldown_sub"][sub] == COOLDOWN

    # another action at that substation: the what-if says why, Apply refuses it, nothing is written
    again = {"kind": "topology", "substation": sub, "set": [[split["set"][0][0], 1]]}
    reason = f"substation {sub} is in cooldown for {COOLDOWN} more step(s)"
    response = _post(client, what_if_url, {"step": 2, "action": again})
    assert response.status_code == 200
    outcome = response.json()["what_if"]
    assert not outcome["legal"] and outcome["refusal"] == reason and outcome["max_rho_after"] is None
    # the same action was fine one step earlier (the panel answers for the step asked)
    earlier = _post(client, what_if_url, {"step": 1, "action": again}).json()["what_if"]
    assert earlier["stale"] and "cooldown" not in earlier["refusal"]

    before = _written(session)
    response = _post(client, apply_url, {"step": 2, "action": again, "comment": "try again"})
    assert response.status_code == 400
    assert response.json()["error"] == f"this action cannot be played: {reason}"
    with pytest.raises(OperationsError, match=re.escape(f"this action cannot be played: {reason}")):
        action_apply(session_id=session.pk, user=operator, step=2, action=again)
    assert _written(session) == before
    assert not Decision.objects.filter(session=session, step=2).exists()
    # the policy recommends nothing there meanwhile (cooldowns mask its actions)
    for rec in LiveRecommendation.objects.filter(session=session, step=2):
        assert rec.action.get("substation") != sub or rec.error, rec.description

    # a line switched off is in cooldown too: switching it back is refused the same way
    switches = [
        {"kind": "line", "line": line["id"], "status": "disconnect"}
        for line in session.layout["lines"]
        if sub not in (line["or"], line["ex"])
    ]
    opened = _first_safe(client, what_if_url, 2, switches)
    assert _post(client, apply_url, {"step": 2, "action": opened}).status_code == 200
    run_feed(session, 1)
    line = opened["line"]
    name = session.layout["lines"][line]["name"]  # the line's one name, as every message gives it
    reconnect = {"kind": "line", "line": line, "status": "connect"}
    outcome = _post(client, what_if_url, {"step": 3, "action": reconnect}).json()["what_if"]
    assert outcome["refusal"] == f"{name} is in cooldown for {COOLDOWN} more step(s)"
    before = _written(session)
    response = _post(client, apply_url, {"step": 3, "action": reconnect})
    assert response.status_code == 400
    assert (
        response.json()["error"]
        == f"this action cannot be played: {name} is in cooldown for {COOLDOWN} more step(s)"
    )
    assert _written(session) == before
    # and the substation's cooldown counts down with the steps
    outcome = _post(client, what_if_url, {"step": 3, "action": again}).json()["what_if"]
    assert outcome["refusal"] == f"substation {sub} is in cooldown for {COOLDOWN - 1} more step(s)"
