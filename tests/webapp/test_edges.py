"""Clean edges of the site: the favicon is served, a refused request (403) is one line of log
rather than a traceback, an oversized body to a JSON endpoint gets the JSON error shape, and a
reviewer's rejection reads "rejected"."""

from __future__ import annotations

import logging
import sys

import pytest
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import client_for
from webapp.log_filters import OneLineClientErrors


def test_the_favicon_is_served():
    response = Client().get("/favicon.ico", follow=True)
    assert response.status_code == 200 and response.redirect_chain[0][1] == 301
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file
    page = Client().get(reverse("accounts:login")).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in page


@pytest.mark.django_db
def test_a_refused_request_is_logged_as_one_line(operator, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client_for(operator).get(reverse("training:run_list")).status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /runs/"
    assert record.exc_info is None and record.exc_text is None


def test_server_errors_keep_their_traceback():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), exc_info
    )
    record.status_code = 500
    assert OneLineClientErrors().filter(record) and record.exc_info is exc_info


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True])
def test_an_oversized_body_to_a_json_endpoint_gets_the_json_shape(operator, settings, signed_in):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    client = client_for(operator if signed_in else None)
    url = reverse("operations:decide", args=[1])
    response = client.post(url, data='{"comment": "' + "x" * 5000 + '"}', content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "the request body is 5015 bytes long",
        "field": None,
        "accepted": "at most 2048 bytes",
    }


@pytest.mark.django_db
def test_a_rejection_reads_rejected(reviewer, make_run, make_refinement):
    run = make_run()
    refinement = make_refinement(run)
    url = reverse("review:refinement_decide", args=[run.pk, refinement.pk])
    response = client_for(reviewer).post(url, {"decision": "reject"}, follow=True)
    html = response.content.decode()
    assert f"refinement {refinement.refinement_id} rejected" in html and "rejectd" not in html
