"""Schema-driven tests: schemathesis generates requests for every operation of the served
OpenAPI schema and sends them to the real application (WSGI, same database transaction).

For each operation, with a token of a role that may call it: no answer is a server error, every
status code, content type and body matches what the schema documents. Half of the examples use
the ids of real objects (a live session fed by the real feed worker, with an alarm; a run, a
refinement, a finished evaluation, a queued mine), the other half whatever was generated (mostly
404s). Then the same request with a token of a role that may not call it must get 403. ``GRIDACE_API_FUZZ_EXAMPLES`` sets the examples per operation.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.webapp.operations.conftest import run_feed
from tests.webapp.training.deploys import finished_evaluation, succeeded_run
from webapp.accounts.roles import ROLE_PERMISSIONS
from webapp.api.auth import PERMISSION_KEY
from webapp.api.services import token_create
from webapp.training.services.mines import mine_launch

EXAMPLES = int(os.environ.get("GRIDACE_API_FUZZ_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
calls: Counter[str] = Counter()
statuses: dict[str, Counter[int]] = {}


# Loaded from the served schema when the module is collected (pytest-django has set Django up).
# (schemathesis.pytest.from_fixture would load it inside a fixture, but schemathesis 4.32 reads a
# node attribute pytest 9 no longer has there.)
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", WSGIHandler())


@pytest.fixture(autouse=True)
def _keep_test_connection() -> Any:
    # the requests run in the test's thread and transaction: keep Django from closing the
    # connection at the end of each request, as its test client does
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def tokens(role_users: dict[str, Any]) -> dict[str, str]:
    return {role: token_create(user=user, name="schema test")[1] for role, user in role_users.items()}


@pytest.fixture
def real_ids(
    make_run: Any,
    make_refinement: Any,
    engineer: Any,
    settings: Any,
    tmp_path: Any,
    request: pytest.FixtureRequest,
) -> dict[str, Any]:
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")  # launches only queue: nothing is written there
    run = make_run()
    evaluation = finished_evaluation(succeeded_run(make_run()), engineer, checked=0.5, do_nothing=0.3)
    mine = mine_launch(env="l2rpn_case14_sandbox", expert="greedy", seeds=1, launched_by=engineer)
    ids = {
        "run_id": run.pk,
        "refinement_id": make_refinement(run).pk,
        "evaluation_id": evaluation.pk,
        "name": mine.name,
    }
    if "/sessions" in request.node.name:  # only the live endpoints need a fed session (a few seconds)
        session = request.getfixturevalue("make_session")()
        run_feed(session, 3)
        session.refresh_from_db()
        recs = session.recommendations.filter(step=session.current_step).order_by("rank")
        alarm = session.alarms.create(
            step=session.current_step,
            kind="overload",
            line=3,
            message="line 3 overloaded",
            raised_at=timezone.now(),
        )
        ids.update(session_id=session.pk, recommendation_id=recs.first().pk, alarm_id=alarm.pk)
    return ids


def _roles_for(permission: str) -> tuple[str, str]:
    """A role that may call an operation needing ``permission``, and one that may not."""
    if permission == "any role":
        return "operator", "none"
    allowed = [role for role, perms in ROLE_PERMISSIONS.items() if permission in perms]
    refused = [role for role in ROLE_PERMISSIONS if role not in allowed]
    return allowed[0], refused[0] if refused else "none"


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    total = sum(calls.values())
    answers = {label: dict(sorted(counts.items())) for label, counts in statuses.items()}
    print("\nschemathesis:", json.dumps({"operations": len(calls), "examples": total, "statuses": answers}))


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_documented(case: Any, tokens: dict[str, str], real_ids: dict[str, int]):
    permission = case.operation.definition.raw[PERMISSION_KEY]
    allowed, refused = _roles_for(permission)
    calls[case.operation.label] += 1
    if case.path_parameters and calls[case.operation.label] % 2:
        case.path_parameters = {
            name: real_ids.get(name, value) for name, value in case.path_parameters.items()
        }

    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {tokens[allowed]}"}
    response = case.call_and_validate(checks=CHECKS)
    statuses.setdefault(case.operation.label, Counter())[response.status_code] += 1

    if case.method.upper() != case.operation.method.upper():
        return  # schemathesis also tries undocumented methods (405): no role to check there
    case.headers["Authorization"] = f"Bearer {tokens[refused]}"
    wrong = case.call()
    assert wrong.status_code == 403, (case.operation.label, refused, wrong.text[:300])
    assert set(wrong.json()) == {"error", "field", "accepted"}
