"""The API's edges: rate limits per token and per address (429 with Retry-After), refusals logged
in the bounded security log rather than the audit log, oversized and malformed bodies, the schema
and the docs page (served from local files, no inline script)."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.test import Client

from tests.webapp.api.conftest import ApiClient, assert_error_shape
from webapp.accounts.models import SecurityEvent
from webapp.audit.models import AuditEntry

pytestmark = pytest.mark.django_db

EXPECTED_PATHS = {
    "/sessions",
    "/sessions/{session_id}/state",
    "/sessions/{session_id}/recommendations",
    "/sessions/{session_id}/recommendations/{recommendation_id}/decision",
    "/sessions/{session_id}/what-if",
    "/sessions/{session_id}/pause",
    "/sessions/{session_id}/resume",
    "/sessions/{session_id}/step",
    "/sessions/{session_id}/speed",
    "/sessions/{session_id}/stop",
    "/sessions/{session_id}/fork",
    "/sessions/{session_id}/alarms/{alarm_id}/acknowledge",
    "/runs",
    "/runs/{run_id}",
    "/runs/{run_id}/cancel",
    "/runs/{run_id}/resume",
    "/runs/{run_id}/metrics",
    "/runs/{run_id}/evaluations",
    "/evaluations/{evaluation_id}",
    "/mines",
    "/mines/{name}",
    "/runs/{run_id}/deploy-check",
    "/runs/{run_id}/deploy",
    "/deployments",
    "/deployments/{deployment_id}/rollback",
    "/refinements",
    "/refinements/{refinement_id}/decision",
    "/audit",
    "/me",
}


@pytest.fixture(autouse=True)
def _fresh_counters():
    cache.clear()
    yield
    cache.clear()


def test_each_token_has_its_own_rate_limit(api_as, engineer, settings):
    settings.GRIDACE_API_RATE = "3/min"
    first, second = api_as(engineer), api_as(engineer)
    assert [first.get("/me").status_code for _ in range(3)] == [200, 200, 200]
    refused = first.get("/me")
    body = assert_error_shape(refused, 429)
    assert "too many requests" in body["error"] and 1 <= int(refused["Retry-After"]) <= 60
    assert body["accepted"] == "3/min"
    assert second.get("/me").status_code == 200  # another token, another counter


def test_refused_requests_count_against_the_limit_and_go_to_the_security_log(api_as, operator, settings):
    settings.GRIDACE_API_RATE = "2/min"
    api = api_as(operator)
    entries = AuditEntry.objects.count()
    assert [api.post("/runs", {}).status_code for _ in range(4)] == [403, 403, 429, 429]
    assert AuditEntry.objects.count() == entries  # the decision audit holds decisions only
    refused = SecurityEvent.objects.get(kind="api.refused")
    assert (refused.status, refused.count, refused.method, refused.path) == (403, 2, "POST", "/api/v1/runs")
    assert refused.username == operator.username and refused.address == "127.0.0.1"
    assert "may not do this" in refused.detail
    throttled = SecurityEvent.objects.get(kind="api.throttled")
    assert (throttled.status, throttled.count) == (429, 2)


def test_each_address_has_its_own_rate_limit_tokens_or_not(api_as, engineer, settings):
    settings.GRIDACE_API_ADDRESS_RATE = "3/min"
    stranger = ApiClient("gat_00000000_not-a-token")
    assert [stranger.get("/me").status_code for _ in range(3)] == [401, 401, 401]
    refused = stranger.get("/me")
    body = assert_error_shape(refused, 429)
    assert "too many requests for this address" in body["error"] and body["accepted"] == "3/min"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # a valid token from the same address is throttled too; another address is not
    assert api_as(engineer).get("/me").status_code == 429
    elsewhere = api_as(engineer)
    elsewhere.client.defaults["REMOTE_ADDR"] = "10.3.0.1"
    assert elsewhere.get("/me").status_code == 200
    assert SecurityEvent.objects.get(kind="api.throttled").count == 2


def test_bad_rate_settings_are_named(api_as, engineer, settings):
    from webapp.api.throttling import parse_rate

    assert parse_rate("600/min") == (600, 60) and parse_rate("5/s") == (5, 1)
    with pytest.raises(ValueError, match="accepted: N/s, N/min or N/hour"):
        parse_rate("lots")


def test_oversized_and_malformed_bodies_get_the_error_shape(api_as, engineer, settings):
    settings.GRIDACE_API_MAX_BODY_BYTES = 1024
    api = api_as(engineer)
    big = assert_error_shape(api.post("/runs", {"label": "x", "config": {"llm_model": "y" * 2000}}), 413)
    assert big["accepted"] == "at most 1024 bytes"
    assert assert_error_shape(api.post("/runs", raw=b"{not json"), 400)["accepted"] == "a JSON object"
    not_object = assert_error_shape(api.post("/runs", raw=b"[1, 2]"), 400)
    assert not_object["error"] == "the request body is not a JSON object"
    # refused writes are logged in the security log with their status, not in the audit log
    assert dict(SecurityEvent.objects.values_list("status", "count")) == {400: 2, 413: 1}
    assert not AuditEntry.objects.filter(action="api.request").exists()


def test_a_body_over_djangos_limit_gets_the_error_shape_not_an_html_page(api_as, engineer, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    big = {"label": "x", "config": {"llm_model": "y" * 5000}}
    for client in (api_as(engineer), ApiClient(None)):
        body = assert_error_shape(client.post("/runs", big), 413)
        assert body["accepted"] == "at most 2048 bytes" and "bytes long" in body["error"]


def test_the_schema_is_served_with_every_operation_gated():
    schema = Client().get("/api/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    operations = [op for item in schema["paths"].values() for op in item.values()]
    assert len(operations) == 32
    assert all(op["security"] == [{"TokenAuth": []}] and op["x-gridace-permission"] for op in operations)
    assert all({"401", "403", "422", "429"} <= set(op["responses"]) for op in operations)
    assert set(schema["paths"]) == {f"/api/v1{path}" for path in EXPECTED_PATHS}


def test_the_docs_page_loads_local_assets_without_inline_script():
    page = Client().get("/api/v1/docs").content.decode()
    sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', page)
    assert sources and all(src.startswith("/static/") for src in sources), sources
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.S)
    inline = [attrs for attrs, body in scripts if body.strip() and 'type="application/json"' not in attrs]
    assert inline == []
    for src in sources:
        assert Client().get(src).status_code == 200, src


def test_unknown_api_paths_answer_404_in_the_error_shape():
    body = assert_error_shape(Client().get("/api/v1/nowhere/at/all"), 404)
    assert body["error"] == "no API operation at /api/v1/nowhere/at/all"


def test_a_method_a_path_does_not_have_answers_405_in_the_error_shape(api_as, operator):
    response = api_as(operator).client.delete("/api/v1/me")
    body = assert_error_shape(response, 405)
    assert body["error"] == "DELETE is not allowed here" and body["accepted"] == response["Allow"] == "GET"


@pytest.mark.parametrize(
    ("body", "field", "accepted"),
    [
        ({"confg": {"steps": 5}}, "confg", "only the keys the API documents (see /api/v1/docs)"),
        ({"label": 5}, "label", "text"),
        ({"label": "x", "config": [1]}, "config", "a JSON object"),
    ],
)
def test_a_launch_with_an_unknown_key_or_a_loose_type_is_refused_and_launches_nothing(
    api_as, engineer, body, field, accepted
):
    from webapp.training.models import TrainingRun

    refused = assert_error_shape(api_as(engineer).post("/runs", body), 422)
    assert (refused["field"], refused["accepted"]) == (field, accepted)
    assert not TrainingRun.objects.exists()


@pytest.mark.parametrize("step", [" 5", "+5", "5", 5.0, True, -1, 2**31])
def test_a_step_is_a_plain_json_integer(api_as, operator, step):
    refused = assert_error_shape(
        api_as(operator).post("/sessions/1/what-if", {"step": step, "action": {"kind": "nothing"}}), 422
    )
    assert refused["field"] == "step"
