"""Malformed, deeply nested, huge, wrong-typed and out-of-range input to the live console: a 4xx
that names the field and what is accepted, never a 500, and nothing written."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.operations.models import Decision, LiveSession

pytestmark = pytest.mark.django_db


def _post(client, url, body: str):
    return client.post(url, data=body, content_type="application/json")


@pytest.fixture
def console(make_session, operator):
    session = make_session()
    run_feed(session, 1)
    return session, client_for(operator)


@pytest.mark.parametrize("route", ["operations:what_if", "operations:decide", "operations:apply"])
def test_deep_nesting_and_huge_numbers_get_a_json_400(console, route):
    session, client = console
    url = reverse(route, args=[session.pk])
    audit_before = AuditEntry.objects.count()
    cases = {
        "[" * 100_000: "the request body has 100000 bytes; accepted: at most 65536",
        "[" * 60_000: "nested too deeply",
        '{"step": ' + "9" * 5000 + "}": "5000 digits",
        '{"step": 1e999}': "too large",
        '{"step": NaN}': "NaN is not a JSON number",
        # decide names its recommendation first, the others their step
        '{"step": 10000000000000000000000}': "must be a whole number from 0 to 2147483647",
        '{"step": "1", "recommendation": "1"}': "must be a whole number from 0 to 2147483647 (got '1')",
        '{"step": true, "recommendation": true}': "(got true)",
        '{"step": 1.0, "recommendation": 1.0}': "(got 1.0)",
        "[1]": "must be a JSON object",
    }
    for body, reason in cases.items():
        response = _post(client, url, body)
        assert response.status_code == 400, (body[:30], response.status_code)
        assert reason in response.json()["error"], (body[:30], response.json())
    assert AuditEntry.objects.count() == audit_before and not Decision.objects.exists()


def test_action_parts_are_typed_strictly(console):
    session, client = console
    url = reverse("operations:what_if", args=[session.pk])
    refused = {
        '{"kind": "index", "index": "3"}': "action.index must be a whole number",
        '{"kind": "line", "line": "4", "status": "disconnect"}': "action.line must be a whole number",
        '{"kind": "topology", "substation": 1, "set": [["0", 2]]}': "action.set element must be",
        '{"kind": "topology", "substation": 1, "set": [[0, 7]]}': "action.set bus must be a whole number from 1 to 2",
        '{"kind": 3}': "action.kind must be text",
    }
    for action, reason in refused.items():
        response = _post(client, url, '{"step": 1, "action": ' + action + "}")
        assert response.status_code == 400 and reason in response.json()["error"], (action, response.json())
    accepted = _post(client, url, json.dumps({"step": 1, "action": {"kind": "index", "index": 3}}))
    assert accepted.status_code == 200 and "what_if" in accepted.json()


def test_a_continuous_move_is_typed_strictly(console):
    session, client = console
    url = reverse("operations:what_if", args=[session.pk])
    refused = {
        '{"kind": "nothing", "move": [1]}': "action.move must be a JSON object with any of redispatch",
        '{"kind": "nothing", "move": {"boost": []}}': "action.move: unknown part(s) boost; accepted:",
        '{"kind": "nothing", "move": {"redispatch": [["0", 2.0]]}}': "action.move.redispatch unit must be",
        '{"kind": "nothing", "move": {"storage": [[0, "2"]]}}': "action.move.storage MW must be a number",
        '{"kind": "nothing", "move": {"curtail": [[0]]}}': "action.move.curtail: [0] is not a [unit, MW] pair",
    }
    for action, reason in refused.items():
        response = _post(client, url, '{"step": 1, "action": ' + action + "}")
        assert response.status_code == 400 and reason in response.json()["error"], (action, response.json())
    move = {"redispatch": [[0, 2.0]]}
    accepted = _post(client, url, json.dumps({"step": 1, "action": {"kind": "nothing", "move": move}}))
    assert accepted.status_code == 200, accepted.json()
    what_if = accepted.json()["what_if"]
    assert what_if["legal"] and what_if["action"]["move"] == move and what_if["figures"]["cost"]["mw"] >= 2.0


def test_decide_refuses_a_comment_that_is_not_text(console):
    session, client = console
    rec = session.recommendations.filter(step=1).first()
    for comment in ({"a": 1}, "fine\x00"):
        body = {"recommendation": rec.pk, "step": 1, "decision": "accept", "comment": comment}
        response = _post(client, reverse("operations:decide", args=[session.pk]), json.dumps(body))
        assert response.status_code == 400 and "comment must be text" in response.json()["error"]
    assert not Decision.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seed", str(10**20), "accepted: 0 to 2147483647"),
        ("max_steps", str(10**20), "accepted: 0 to 2147483647"),
        ("scenario_index", "١٢", "digits 0-9"),
        ("k", "３", "digits 0-9; accepted: 1 to 10"),
        ("speed_seconds", "inf", "digits 0-9"),
        ("speed_seconds", "１.5", "digits 0-9"),
    ],
)
def test_session_start_bounds_integers_before_the_database(engineer, deployment, field, value, message):
    data = {"scenario_index": 0, "seed": 0, "k": 3, "speed_seconds": 1, "max_steps": 0, field: value}
    response = client_for(engineer).post(reverse("operations:session_start"), data)
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not LiveSession.objects.exists()
