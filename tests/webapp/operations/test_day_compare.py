"""The day-comparison page: two evaluation episodes of one day (real Runner output) side by side,
a finished session against doing nothing on its day, who may open it, and the names it refuses
(paths outside its folders, names it does not give, two different days)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from ace_core.evaluation.runner import evaluate
from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import ENV, run_feed
from webapp.jobs.models import JobStatus
from webapp.training.models import Evaluation

pytestmark = pytest.mark.django_db
LENGTH = 30
AGENTS = {"do-nothing": "do-nothing", "greedy": "greedy:budget=200,threshold=0.5"}
URL = reverse("operations:day_compare")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each agent's evaluation folder (doing nothing on two scenarios: the second is another day)."""
    root = tmp_path_factory.mktemp("evaluations")
    for name, spec in AGENTS.items():
        evaluate(
            ENV,
            spec,
            "test",
            nb_episode=2 if name == "do-nothing" else 1,
            out_dir=root / name,
            episode_length=LENGTH,
        )
    return root


@pytest.fixture
def evaluation(deployment: Any, engineer: Any, played: Path, settings: Any, tmp_path: Path) -> Evaluation:
    settings.GRIDACE_DATA_DIR = tmp_path / "data"
    checkpoint = deployment.checkpoint
    evaluation = Evaluation.objects.create(
        run=checkpoint.run,
        checkpoint=checkpoint,
        split="test",
        nb_episode=2,
        requested_by=engineer,
        status=JobStatus.SUCCEEDED,
        results={name: {} for name in AGENTS},
    )
    shutil.copytree(played, Path(checkpoint.run.out_dir) / "evaluations" / str(evaluation.pk))
    return evaluation


def _keys(evaluation: Evaluation, agent: str) -> list[str]:
    folder = Path(evaluation.run.out_dir) / "evaluations" / str(evaluation.pk) / agent / "episodes" / "seed0"
    return [
        f"runs/run-{evaluation.run.pk}/evaluations/{evaluation.pk}/{agent}/episodes/seed0/{p.name}"
        for p in sorted(folder.iterdir())
    ]


def test_two_agents_on_one_day_side_by_side_with_synchronised_diagrams(evaluation, engineer):
    client = client_for(engineer)
    picker = client.get(URL)
    (nothing, _), (greedy,) = _keys(evaluation, "do-nothing"), _keys(evaluation, "greedy")
    assert picker.status_code == 200
    assert {choice.key for choice in picker.context["choices"]} >= {nothing, greedy}
    page = client.get(URL, {"a": nothing, "b": greedy})
    assert page.status_code == 200
    text = page.content.decode()
    assert "do-nothing · seed 0" in text and "greedy · seed 0" in text
    rows = {name: (a, b) for name, a, b in page.context["rows"]}
    assert rows["Survival"] == (f"{LENGTH} / {LENGTH} steps (100 %)",) * 2
    assert rows["Topology actions per substation"][0] == "none"
    assert rows["Topology actions per substation"][1].startswith("substation ")
    assert "ms median" in rows["Decision time"][1]
    # one slider moves both diagrams: the console's drawing and one frame per state on each side
    data = json.loads(re.search(r'id="compare-data" type="application/json">(.*?)</script>', text).group(1))
    assert data["layout"]["env"] == ENV and len(data["layout"]["lines"]) == 20
    assert [len(side["frames"]) for side in data["sides"]] == [LENGTH + 1, LENGTH + 1]
    assert 'id="compare-slider"' in text and 'id="diagram-a"' in text and 'id="diagram-b"' in text
    assert "js/day_compare.js" in text and "<script>" not in text  # no inline script (CSP)


def test_an_operators_session_against_doing_nothing_on_its_day(make_session, engineer, evaluation, settings):
    session = make_session(max_steps=5)
    client = client_for(engineer)
    run_feed(session, 2)
    live = client.get(URL, {"a": f"session/{session.pk}/operator", "b": f"session/{session.pk}/do-nothing"})
    assert live.status_code == 400 and "only a session that ended" in live.context["error"]
    run_feed(session, 10)
    keys = {choice.key for choice in client.get(URL).context["choices"]}
    assert {f"session/{session.pk}/operator", f"session/{session.pk}/do-nothing"} <= keys
    page = client.get(URL, {"a": f"session/{session.pk}/operator", "b": f"session/{session.pk}/do-nothing"})
    assert page.status_code == 200, page.context.get("error")
    rows = {name: (a, b) for name, a, b in page.context["rows"]}
    assert rows["Survival"] == ("5 / 5 steps (100 %)",) * 2
    assert rows["Steps whose action changed the grid"][1] == "0"
    assert rows["Decision time"][0].startswith("not recorded in a replay")
    # each play is written once, under the data folder, and read from there afterwards
    written = Path(settings.GRIDACE_DATA_DIR) / "session-episodes" / f"session-{session.pk}"
    assert sorted(p.name for p in written.iterdir()) == ["do-nothing", "operator"]


def test_refusals_name_what_is_accepted_and_never_the_servers_folders(
    evaluation, engineer, operator, reviewer, settings
):
    (nothing, other_day), (greedy,) = _keys(evaluation, "do-nothing"), _keys(evaluation, "greedy")
    engineer_client = client_for(engineer)
    for bad in (
        "runs/../../../etc",
        "runs/" + "../" * 12 + "tmp",
        "/etc/passwd",
        "runs/",
        "runs/x\x00y",
        "extra1/anything",
        "session/0/operator",
        "session/1/autopilot",
        "sessión/1/operator",
        "data/x",
        "session/999999/operator",
        "x" * 600,
    ):
        page = engineer_client.get(URL, {"a": bad, "b": greedy})
        assert page.status_code == 400, bad
        assert (
            "accepted" in page.context["error"]
            and str(settings.GRIDACE_RUNS_DIR) not in page.content.decode()
        )
    outside = engineer_client.get(URL, {"a": "runs/../../../etc", "b": greedy})
    assert "outside the folders episodes may be opened from" in outside.context["error"]
    days = engineer_client.get(URL, {"a": other_day, "b": greedy})
    assert days.status_code == 400 and "only two episodes of the same env and day" in days.context["error"]
    # operators compare sessions, not evaluations; reviewers do not open the page
    refused = client_for(operator).get(URL, {"a": nothing, "b": greedy})
    assert refused.status_code == 400 and "is not accepted" in refused.context["error"]
    assert not [c for c in client_for(operator).get(URL).context["choices"] if c.key.startswith("runs/")]
    assert client_for(reviewer).get(URL).status_code == 403


def test_extra_roots_list_any_runner_folder(evaluation, engineer, played, settings, capsys):
    settings.GRIDACE_EPISODE_ROOTS = [str(played)]
    keys = {choice.key for choice in client_for(engineer).get(URL).context["choices"]}
    assert "extra1/greedy/episodes/seed0/0000@120+30/0000" in keys
    call_command("episode_folders")
    assert "extra1/greedy/episodes/seed0/0000@120+30/0000" in capsys.readouterr().out
