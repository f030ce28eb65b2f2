"""The console's pages and JSON endpoints: start form, refusals with their reason, replay and the
EpisodeData export (read back with grid2op's own EpisodeData.from_disk)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import run_feed
from webapp.operations.models import LiveRecommendation, LiveSession

pytestmark = pytest.mark.django_db


def _post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_an_engineer_starts_a_session_from_the_form(engineer, deployment):
    client = client_for(engineer)
    page = client.get(reverse("operations:session_start"))
    assert page.status_code == 200 and b"0000@0+288" in page.content
    refused = client.post(
        reverse("operations:session_start"),
        {"scenario_index": 99, "seed": 0, "k": 3, "speed_seconds": 1, "max_steps": 0},
    )
    assert refused.status_code == 400 and b"scenario 99 does not exist" in refused.content
    too_late = client.post(
        reverse("operations:session_start"),
        {"scenario_index": 1, "start_step": 287, "seed": 0, "k": 3, "speed_seconds": 1, "max_steps": 0},
    )
    assert too_late.status_code == 400 and b"start step 287 is outside scenario 1" in too_late.content
    assert not LiveSession.objects.exists()
    made = client.post(
        reverse("operations:session_start"),
        {"scenario_index": 1, "start_step": 12, "seed": 2, "k": 3, "speed_seconds": 1, "max_steps": 0},
    )
    session = LiveSession.objects.get()
    assert made.status_code == 302 and made["Location"] == reverse("operations:console", args=[session.pk])
    assert (session.scenario_index, session.seed, session.policy_path) == (1, 2, deployment.path)
    assert (session.start_step, session.scenario_name) == (12, "0000@300+275")  # an hour into the day


def test_console_endpoints_refuse_bad_input_with_the_reason(make_session, operator):
    session = make_session()
    run_feed(session, 1)
    client = client_for(operator)
    assert client.get(reverse("operations:console", args=[session.pk])).status_code == 200
    what_if = reverse("operations:what_if", args=[session.pk])
    response = client.post(what_if, data="not json", content_type="application/json")
    assert response.status_code == 400 and "not JSON" in response.json()["error"]
    response = _post(
        client, what_if, {"step": 1, "action": {"kind": "topology", "substation": 42, "set": [[0, 2]]}}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "unknown substation 42; this grid has substations 0 to 13"
    response = _post(
        client, what_if, {"step": 1, "action": {"kind": "topology", "substation": 1, "set": [[9, 2]]}}
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith(
        "substation 1 has no element 9; accepted: 0 to 5 (line 0-1, line 1-2"
    )
    islanding = {"kind": "topology", "substation": 4, "set": [[4, 2]]}
    response = _post(client, what_if, {"step": 1, "action": islanding})
    assert response.status_code == 200 and not response.json()["what_if"]["legal"]
    assert response.json()["what_if"]["refusal"].startswith("would island load 3 on bus 2 of substation 4")
    response = _post(client, reverse("operations:apply", args=[session.pk]), {"step": 1, "action": islanding})
    assert response.status_code == 400 and "cannot be played: would island load 3" in response.json()["error"]
    assert not session.decisions.exists()  # nothing half-written
    response = _post(
        client, what_if, {"step": 1, "action": {"kind": "line", "line": 4, "status": "disconnect"}}
    )
    assert response.status_code == 200 and response.json()["what_if"]["legal"]
    decide = reverse("operations:decide", args=[session.pk])
    rec = LiveRecommendation.objects.filter(session=session, step=1, error="").first()
    response = _post(client, decide, {"recommendation": rec.pk, "step": 7, "decision": "accept"})
    assert response.status_code == 400 and "not at step 7" in response.json()["error"]
    response = _post(client, decide, {"recommendation": rec.pk, "step": "1", "decision": "accept"})
    assert (
        response.status_code == 400
        and "step must be a whole number from 0 to 2147483647" in response.json()["error"]
    )
    assert (
        _post(client, decide, {"recommendation": rec.pk, "step": 1, "decision": "accept"}).status_code == 200
    )
    again = _post(client, decide, {"recommendation": rec.pk, "step": 1, "decision": "accept"})
    assert again.status_code == 409 and "already has an action" in again.json()["error"]
    control = reverse("operations:control", args=[session.pk])
    response = _post(client, control, {"command": "stop"})
    assert response.status_code == 400 and "only engineers may stop a session" in response.json()["error"]


def test_replay_and_episode_data_export_of_a_finished_session(make_session, engineer, tmp_path):
    from grid2op.Episode import EpisodeData

    session = make_session(max_steps=5)
    client = client_for(engineer)
    run_feed(session, 2)
    refused = client.get(reverse("operations:export", args=[session.pk]))
    assert refused.status_code == 400 and b"only a session that ended" in refused.content
    run_feed(session, 10)
    session.refresh_from_db()
    assert session.status == "finished"
    replay = client.get(reverse("operations:replay", args=[session.pk]))
    frames = replay.context["replay"]["frames"]
    assert replay.status_code == 200 and [f["step"] for f in frames] == [0, 1, 2, 3, 4, 5]
    response = client.get(reverse("operations:export", args=[session.pk]))
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")
    zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).extractall(tmp_path / "export")
    (folder,) = [p for p in (tmp_path / "export" / "episodes").iterdir() if p.is_dir()]
    episode = EpisodeData.from_disk(str(folder.parent), folder.name)
    assert len(episode.actions) == 5
    assert abs(float(episode.observations[-1].rho.max()) - frames[-1]["max_rho"]) < 1e-3
