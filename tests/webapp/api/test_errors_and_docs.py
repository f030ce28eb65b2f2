"""The API's edges: rate limits per token, oversized and malformed bodies, the schema and the
docs page (served from local files, no inline script)."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.test import Client

from tests.webapp.api.conftest import assert_error_shape
from webapp.audit.models import AuditEntry

pytestmark = pytest.mark.django_db

EXPECTED_PATHS = {
    "/sessions",
    "/sessions/{session_id}/state",
    "/sessions/{session_id}/recommendations",
    "/sessions/{session_id}/recommendations/{recommendation_id}/decision",
    "/sessions/{session_id}/what-if",
    "/runs",
    "/runs/{run_id}",
    "/runs/{run_id}/cancel",
    "/runs/{run_id}/resume",
    "/runs/{run_id}/metrics",
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


def test_refused_requests_count_against_the_limit(api_as, operator, settings):
    settings.GRIDACE_API_RATE = "2/min"
    api = api_as(operator)
    assert [api.post("/runs", {}).status_code for _ in range(3)] == [403, 403, 429]
    assert AuditEntry.objects.filter(action="api.request").count() == 2  # the 429 reached nothing


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
    # refused writes are audited as API requests too, with their status
    statuses = sorted(AuditEntry.objects.filter(action="api.request").values_list("after__status", flat=True))
    assert statuses == [400, 400, 413]


def test_the_schema_is_served_with_every_operation_gated():
    schema = Client().get("/api/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    operations = [op for item in schema["paths"].values() for op in item.values()]
    assert len(operations) == 15
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
