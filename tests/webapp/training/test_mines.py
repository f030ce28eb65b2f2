"""The mines pages: finished mines listed from disk with their figures, a mine's coverage and
most played topologies in words, starting a mine from the form (a real mine on the worker), its
refusals, and the launch form's choice of mine for the imitation start."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from ace_core.imitation.mining import MineSpec
from tests.webapp.conftest import client_for, tiny_config
from tests.webapp.training.conftest import MINE_ENV
from tests.webapp.training.test_tasks import work_off_queue
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.training.models import Mine, TrainingRun

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_mines_page_lists_a_finished_mine_with_its_figures(engineer, mines_dir, finished_mine):
    out, summary = finished_mine
    response = client_for(engineer).get(reverse("training:mine_list"))
    assert response.status_code == 200
    row = re.search(rf'<tr id="mine-{out.name}">(.*?)</tr>', response.content.decode(), re.S).group(1)
    cells = [
        unescape(re.sub(r"<[^>]+>", "", cell)).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]
    coverage = summary["coverage"]
    assert cells == [
        out.name,
        MINE_ENV,
        "greedy:threshold=0.7",
        "train",
        "1",
        "1",
        str(summary["decisions"]),
        str(summary["topology_decisions"]),
        str(summary["distinct_topologies"]),
        " / ".join(f"{coverage[top]:.3f}" for top in ("10", "25", "50")),
    ]
    assert summary["topology_decisions"] > 0


def test_a_mine_page_shows_its_coverage_and_most_played_topologies_in_words(
    engineer, mines_dir, finished_mine
):
    out, summary = finished_mine
    response = client_for(engineer).get(reverse("training:mine_detail", args=[out.name]))
    assert response.status_code == 200
    html = response.content.decode()
    coverage = html.split('id="mine-coverage"')[1].split("</table>")[0]
    assert [
        f"{summary['coverage'][top]:.3f}" for top in ("10", "25", "50", "100", "200", "500")
    ] == re.findall(r"<td>([0-9.]+)</td>", coverage)
    actions = json.loads((out / "action_set.json").read_text())["actions"]
    top = response.context["top_actions"]
    assert [(row["index"], row["count"]) for row in top] == [tuple(pair) for pair in actions[:25]]
    assert top[0]["description"].startswith("substation ") and top[0]["description"] in unescape(html)
    assert sum(row["share"] for row in top) == pytest.approx(
        sum(c for _, c in actions[:25]) / summary["topology_decisions"]
    )
    # and the way to a run that starts from it
    link = f"{reverse('training:run_launch')}?mine={out.name}"
    assert link in html


def test_a_mine_page_says_under_which_line_attacks_it_was_mined(engineer, settings, finished_mine, tmp_path):
    out, summary = finished_mine
    settings.GRIDACE_MINES_DIR = str(tmp_path)  # a folder of its own: the shared one stays as it is
    shutil.copytree(out, tmp_path / out.name)
    attacked = tmp_path / f"{out.name}-attacked"
    shutil.copytree(out, attacked)
    (attacked / "summary.json").write_text(
        json.dumps({**summary, "mine": {**summary["mine"], "opponent": "random-line"}})
    )
    client = client_for(engineer)
    for name, shown in ((out.name, "the env's own"), (attacked.name, "random-line")):
        html = client.get(reverse("training:mine_detail", args=[name])).content.decode()
        assert f'<dd id="mine-opponent">{shown}</dd>' in html


def test_an_unknown_mine_name_is_not_found(engineer, mines_dir):
    client = client_for(engineer)
    for name in ("no-such-mine", "..", "x" * 300):
        assert client.get(reverse("training:mine_detail", args=[name])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_starting_a_mine_through_the_form_runs_it_on_the_worker_and_lists_it(engineer, settings, tmp_path):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    data = {
        "env": MINE_ENV,
        "expert": "greedy:threshold=0.75",
        "seeds": "1",
        "episodes": "1",
        "episode_length": "8",
    }
    response = client_for(engineer).post(reverse("training:mine_launch"), data)
    mine = Mine.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "training:mine_detail", args=[mine.name]
    )
    assert (mine.status, mine.launched_by) == (JobStatus.QUEUED, engineer)
    assert (mine.spec["seeds"], mine.spec["episodes"], mine.spec["split"]) == (1, 1, "train")
    assert Path(mine.out_dir).parent == (tmp_path / "mines").resolve()
    entry = AuditEntry.objects.get(action="mine.launch")
    assert (entry.actor, entry.target_id, entry.after["expert"]) == (
        engineer,
        str(mine.pk),
        "greedy:threshold=0.75",
    )
    assert entry.after == {**mine.spec, "out_dir": mine.out_dir}  # every setting, as the row keeps it
    page = client_for(engineer).get(response["Location"])
    assert 'id="mine-progress"' in page.content.decode() and "js/mine_progress.js" in page.content.decode()

    work_off_queue()

    mine.refresh_from_db()
    assert mine.status == JobStatus.SUCCEEDED, mine.error
    assert mine.episodes_total == 1 and (Path(mine.out_dir) / "summary.json").is_file()
    progress = client_for(engineer).get(reverse("training:mine_progress", args=[mine.name])).json()
    assert progress == {
        "name": mine.name,
        "status": "succeeded",
        "done": 1,
        "total": 1,
        "finished": True,
        "error": "",
    }
    listed = client_for(engineer).get(reverse("training:mine_list")).content.decode()
    assert f'id="mine-{mine.name}"' in listed
    # the same mine again: refused, it is already there
    again = client_for(engineer).post(reverse("training:mine_launch"), data)
    assert again.status_code == 400 and "already finished" in _text(again)
    # under line attacks it is another mine, in the directory the command line would use
    attacked = client_for(engineer).post(reverse("training:mine_launch"), {**data, "opponent": "random-line"})
    assert attacked.status_code == 302
    row = Mine.objects.get(spec__opponent="random-line")
    spec = MineSpec(
        env=MINE_ENV, expert="greedy:threshold=0.75", episodes=1, episode_length=8, opponent="random-line"
    )
    assert row.name == spec.default_dir().name != mine.name
    assert (
        AuditEntry.objects.get(action="mine.launch", target_id=str(row.pk)).after["opponent"] == "random-line"
    )
    work_off_queue()
    row.refresh_from_db()
    assert row.status == JobStatus.SUCCEEDED, row.error
    assert json.loads((Path(row.out_dir) / "mine.json").read_text())["opponent"] == "random-line"
    page = client_for(engineer).get(reverse("training:mine_detail", args=[row.name])).content.decode()
    assert "line attacks: random-line" in page and '<dd id="mine-opponent">random-line</dd>' in page
    # heavier days are another mine too, mined as the command line's --demand-scale would
    heavy = client_for(engineer).post(reverse("training:mine_launch"), {**data, "demand_scale": "1.1"})
    assert heavy.status_code == 302
    row = Mine.objects.get(spec__demand_scale=1.1)
    spec = MineSpec(
        env=MINE_ENV, expert="greedy:threshold=0.75", episodes=1, episode_length=8, demand_scale=1.1
    )
    assert row.name == spec.default_dir().name
    assert AuditEntry.objects.get(action="mine.launch", target_id=str(row.pk)).after["demand_scale"] == 1.1
    work_off_queue()
    row.refresh_from_db()
    assert row.status == JobStatus.SUCCEEDED, row.error
    assert json.loads((Path(row.out_dir) / "mine.json").read_text())["demand_scale"] == 1.1
    page = client_for(engineer).get(reverse("training:mine_detail", args=[row.name])).content.decode()
    assert "demand x1.1" in page and '<dd id="mine-demand">x1.1 (loads and productions)</dd>' in page


@pytest.mark.django_db(transaction=True)
def test_a_mine_that_fails_on_the_worker_shows_its_error(engineer, settings, tmp_path):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    settings.GRIDACE_DATA_DIR = tmp_path / "data"
    settings.GRIDACE_DATA_DIR.mkdir()
    (settings.GRIDACE_DATA_DIR / "set.json").write_text('{"not": "an action set"}')
    data = {
        "env": MINE_ENV,
        "expert": "greedy:actions=set.json",
        "seeds": "1",
        "episodes": "1",
        "episode_length": "8",
    }
    response = client_for(engineer).post(reverse("training:mine_launch"), data)
    assert response.status_code == 302
    mine = Mine.objects.get()
    assert mine.spec["expert"] == f"greedy:actions={settings.GRIDACE_DATA_DIR / 'set.json'}"  # resolved path
    work_off_queue()
    mine.refresh_from_db()
    assert mine.status == JobStatus.FAILED and "is not an action set" in mine.error
    page = client_for(engineer).get(reverse("training:mine_detail", args=[mine.name]))
    assert page.status_code == 200 and "is not an action set" in _text(page)
    assert 'id="mine-error"' in page.content.decode() and "failed" in _text(page)


def test_a_bad_expert_spec_is_refused_with_the_accepted_syntax(engineer, mines_dir):
    client = client_for(engineer)
    for expert, expected in (
        ("bogus", "accepted: greedy, greedy:BUDGET or greedy:key=value,..."),
        ("greedy:speed=3", "with keys budget, lines, threshold, safe, actions, learned"),
        ("greedy:budget=x", "budget='x' must be a int"),
        ("greedy:actions=/etc/passwd", "must name a file inside the data folder"),
    ):
        response = client.post(
            reverse("training:mine_launch"),
            {"env": MINE_ENV, "expert": expert, "seeds": "1", "episode_length": "8"},
        )
        assert response.status_code == 400, expert
        assert expected in " ".join(response.context["form"].errors["expert"]), expert
    for seeds in ("0", "51", "x"):
        response = client.post(
            reverse("training:mine_launch"),
            {"env": MINE_ENV, "expert": "greedy", "seeds": seeds, "episode_length": "8"},
        )
        assert "accepted: 1 to 50" in " ".join(response.context["form"].errors["seeds"])
    for env, opponent, expected in (
        (MINE_ENV, "pirate", "Select a valid choice. pirate is not one of the available choices."),
        ("l2rpn_wcci_2020", "random-line", "has no list of attacked lines for env 'l2rpn_wcci_2020'"),
    ):
        data = {"env": env, "expert": "greedy", "seeds": "1", "episode_length": "8", "opponent": opponent}
        response = client.post(reverse("training:mine_launch"), data)
        assert response.status_code == 400 and expected in _text(response), opponent
    for scale in ("2", "0.5", "heavy", "1e400"):
        data = {
            "env": MINE_ENV,
            "expert": "greedy",
            "seeds": "1",
            "episode_length": "8",
            "demand_scale": scale,
        }
        response = client.post(reverse("training:mine_launch"), data)
        assert response.status_code == 400 and "accepted: 0.8 to 1.3" in _text(response), scale
    response = client.post(
        reverse("training:mine_launch"), {"env": "nowhere", "expert": "greedy", "seeds": "1"}
    )
    assert "unknown env nowhere; available here:" in " ".join(response.context["form"].errors["env"])
    assert not Mine.objects.exists() and not AuditEntry.objects.filter(action="mine.launch").exists()


def test_an_operator_cannot_start_a_mine_nor_see_the_mines(operator, mines_dir, finished_mine):
    client = client_for(operator)
    data = {"env": MINE_ENV, "expert": "greedy", "seeds": "1", "episode_length": "8"}
    assert client.post(reverse("training:mine_launch"), data).status_code == 403
    assert client.get(reverse("training:mine_launch")).status_code == 403
    assert client.get(reverse("training:mine_list")).status_code == 403
    assert client.get(reverse("training:mine_detail", args=[finished_mine[0].name])).status_code == 403
    assert not Mine.objects.exists()


# ----- the launch form's imitation start -----


def _launch(engineer, **overrides):
    data = {key: value for key, value in tiny_config().to_dict().items() if value is not False}
    data.update(overrides)
    return client_for(engineer).post(reverse("training:run_launch"), data)


def test_the_launch_form_offers_the_envs_finished_mines_and_refuses_any_other_path(
    engineer, mines_dir, finished_mine, tmp_path
):
    out = str(finished_mine[0].resolve())
    page = client_for(engineer).get(reverse("training:run_launch"))
    html = page.content.decode()
    main = html.split('id="section-main"')[1].split("</fieldset>")[0]
    for name in (
        "pretrain_mine",
        "pretrain_expert",
        "pretrain_seeds",
        "pretrain_epochs",
        "decisions",
        "validate_every",
    ):
        assert f'name="{name}"' in main, name
    options = main.split('name="pretrain_mine"')[1].split("</select>")[0]
    assert '<option value="" selected>no imitation start</option>' in options
    assert (
        'value="auto"' in options
        and f'<optgroup label="{MINE_ENV}">' in options
        and f'value="{out}"' in options
    )

    launched = _launch(engineer, env=MINE_ENV, pretrain_mine=out)
    assert launched.status_code == 302, launched.context and launched.context["form"].errors
    assert TrainingRun.objects.get().config["pretrain_mine"] == out

    # a mine of another env, a copy outside the mines folders, any other path: refused
    other_env = _launch(engineer, pretrain_mine=out)  # the tiny config is on the sandbox grid
    assert f"was mined on {MINE_ENV}, not l2rpn_case14_sandbox" in " ".join(
        other_env.context["form"].errors["pretrain_mine"]
    )
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "summary.json").write_text((finished_mine[0] / "summary.json").read_text())
    for path in (str(copy), "/etc", f"{out}/..", "/nowhere"):
        response = _launch(engineer, env=MINE_ENV, pretrain_mine=path)
        assert response.status_code == 400
        assert "not a finished mine listed here" in " ".join(response.context["form"].errors["pretrain_mine"])
        anchored = _launch(engineer, env=MINE_ENV, pretrain_mine=out, anchor=1.0, anchor_mine=f"{out},{path}")
        assert "is not a finished mine listed here" in " ".join(
            anchored.context["form"].errors["anchor_mine"]
        )
    assert TrainingRun.objects.count() == 1
    assert _launch(engineer, pretrain_mine="auto").status_code == 302
    anchored = _launch(engineer, env=MINE_ENV, pretrain_mine=out, anchor=1.0, anchor_mine=f" {out} ")
    assert anchored.status_code == 302
    assert TrainingRun.objects.latest("id").config["anchor_mine"] == out


def test_train_from_this_mine_opens_the_launch_form_with_the_mine_chosen(engineer, mines_dir, finished_mine):
    out = finished_mine[0]
    response = client_for(engineer).get(reverse("training:run_launch"), {"mine": out.name})
    form = response.context["form"]
    assert form["pretrain_mine"].value() == str(out.resolve()) and form["env"].value() == MINE_ENV
    assert f'<option value="{out.resolve()}" selected>' in response.content.decode()
    unknown = client_for(engineer).get(reverse("training:run_launch"), {"mine": "../etc"}, follow=True)
    assert "no finished mine of that name" in _text(unknown)
