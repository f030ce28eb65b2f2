"""Engineers' pages: the launch form (every field, clear errors), list, detail, and the actions."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from ace_core.config import config_fields, field_docs
from ace_core.errors import ConfigError
from tests.webapp.conftest import client_for, tiny_config
from webapp.jobs.models import JobStatus
from webapp.training.models import Checkpoint, Deployment, TrainingRun
from webapp.training.services.runs import run_finish, run_launch, run_start

pytestmark = pytest.mark.django_db


def _form_data(**overrides) -> dict:
    data = {key: value for key, value in tiny_config().to_dict().items() if value is not False}
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def test_launch_page_offers_every_config_field_with_its_help(engineer):
    response = client_for(engineer).get(reverse("training:run_launch"))
    assert response.status_code == 200
    form = response.context["form"]
    for field in config_fields():
        assert field.name in form.fields
    html = response.content.decode()
    assert field_docs()["r_bar"] in html and 'name="require_approval"' in html
    assert '<option value="rte_case14_realistic"' in html


ACE_FIELDS = (
    "llm",
    "llm_model",
    "actor_batch",
    "actor_candidates",
    "actor_rounds",
    "critic_threshold",
    "priority_temperature",
    "priority_max",
    "finetune_max_steps",
    "llm_timeout",
)


def test_launch_page_groups_every_ace_setting_in_the_llm_section(engineer):
    response = client_for(engineer).get(reverse("training:run_launch"))
    form = response.context["form"]
    sections = {title: [f.name for f in fields] for title, fields in form.advanced_groups()}
    assert list(sections) == [
        "Environment",
        "Training",
        "Expert anchor",
        "Expert teacher",
        "LLM co-evolution (ACE)",
    ]
    llm, training = sections["LLM co-evolution (ACE)"], sections["Training"]
    assert set(ACE_FIELDS) <= set(llm) and not set(ACE_FIELDS) & set(training)
    assert {"gamma", "batch_size", "hidden", "learning_starts"} <= set(training)
    assert sections["Expert anchor"] == ["anchor_mine", "anchor", "anchor_action_weight"]
    assert sections["Expert teacher"] == [f.name for f in config_fields() if f.name.startswith("teacher_")]
    # every field once (the imitation start, budget and validation beside the recipe, the rest
    # under Advanced), each section in TrainConfig's order
    main = [field.name for field in form.main_fields()]
    assert {"pretrain_mine", "pretrain_epochs", "decisions", "validate_every"} <= set(main)
    names = [field.name for field in config_fields()]
    assert sorted(sum(sections.values(), main)) == sorted(names)
    assert all(fields == sorted(fields, key=names.index) for fields in [*sections.values(), main])
    html = response.content.decode()
    llm_html = html.split('id="section-llm-co-evolution-ace"')[1].split("</fieldset>")[0]
    training_html = html.split('id="section-training"')[1].split("</fieldset>")[0]
    for name in ACE_FIELDS:
        assert f'id="field-{name}"' in llm_html and f'id="field-{name}"' not in training_html


def test_launching_from_the_page_queues_the_run(engineer):
    data = _form_data(label="from page", seed=3)
    del data["actor"]  # an unticked box is absent from the POST
    response = client_for(engineer).post(reverse("training:run_launch"), data)
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "training:run_detail", args=[run.pk]
    )
    assert (run.label, run.config["seed"], run.config["actor"], run.launched_by) == (
        "from page",
        3,
        False,
        engineer,
    )


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"gamma": "1.5"}, "gamma", "gamma=1.5 is out of range; accepted: 0.0 to 1.0"),
        ({"steps": "many"}, "steps", "Enter a whole number in digits 0-9; accepted: 0 to 100000000."),
        ({"steps": "1e12"}, "steps", "Enter a whole number in digits 0-9; accepted: 0 to 100000000."),
        ({"steps": str(10**20)}, "steps", "accepted: 0 to 100000000"),
        ({"steps": "١٢"}, "steps", "digits 0-9"),
        ({"seed": "１０"}, "seed", "digits 0-9; accepted: 0 to 2147483647"),
        ({"gamma": "٠.٥"}, "gamma", "digits 0-9"),
        ({"gamma": "nan"}, "gamma", "accepted: 0.0 to 1.0"),
        ({"env": "atlantis"}, "env", "unknown env atlantis; available here:"),
        ({"head": "wide"}, "head", "wide is not accepted; choose one of: auto, flat, factorised"),
        ({"learning_starts": "8"}, "learning_starts", "learning_starts (8) must be at least batch_size (32)"),
        ({"label": "x" * 101}, "label", "at most 100 characters"),
        (
            {"validation_demand_scale": "2"},
            "validation_demand_scale",
            "validation_demand_scale=2.0 is out of range; accepted: 0.8 to 1.3",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_demand_scales": "1.05,2"},
            "pretrain_demand_scales",
            "pretrain_demand_scales: demand scale 2.0 is out of range; accepted: 0.8 to 1.3",
        ),
        (
            {"pretrain_mine": "auto", "pretrain_attacks": "hail"},
            "pretrain_attacks",
            "pretrain_attacks: unknown opponent 'hail'; accepted: env, none, random-line, storm",
        ),
    ],
)
def test_bad_configs_are_refused_on_the_field_with_a_clear_message(engineer, overrides, field, message):
    response = client_for(engineer).post(reverse("training:run_launch"), _form_data(**overrides))
    assert response.status_code == 400
    errors = " ".join(response.context["form"].errors[field])
    assert message in errors
    assert message.split(";")[0] in response.content.decode().replace("&#x27;", "'")
    assert not TrainingRun.objects.exists()


def test_a_run_needing_an_unconfigured_llm_server_is_refused_at_launch(engineer, monkeypatch):
    """llm=openai needs the server GRIDACE_LLM_BASE_URL names: without it the run would only fail in
    the worker, so the launch refuses it on the field, naming what is missing."""
    monkeypatch.delenv("GRIDACE_LLM_BASE_URL", raising=False)
    client = client_for(engineer)
    response = client.post(reverse("training:run_launch"), _form_data(llm="openai"))
    assert response.status_code == 400
    error = " ".join(response.context["form"].errors["llm"])
    assert "llm=openai needs an OpenAI-compatible server, and GRIDACE_LLM_BASE_URL is not set" in error
    assert "accepted: set GRIDACE_LLM_BASE_URL" in error
    assert not TrainingRun.objects.exists()
    with pytest.raises(ConfigError, match="GRIDACE_LLM_BASE_URL is not set"):  # the service, for any caller
        run_launch(config=tiny_config(llm="openai"), launched_by=engineer)
    assert not TrainingRun.objects.exists()

    monkeypatch.setenv("GRIDACE_LLM_BASE_URL", "http://gpu-box:8000/v1")
    assert client.post(reverse("training:run_launch"), _form_data(llm="openai")).status_code == 302
    assert TrainingRun.objects.get().config["llm"] == "openai"


def test_forged_post_without_csrf_token_is_refused(engineer):
    client = client_for(engineer, enforce_csrf_checks=True)
    response = client.post(reverse("training:run_launch"), _form_data())
    assert response.status_code == 403
    assert "did not carry a valid security token" in response.content.decode()
    assert not TrainingRun.objects.exists()


def test_run_list_and_detail(engineer, make_run):
    run = make_run(label="tiny")
    client = client_for(engineer)
    listing = client.get(reverse("training:run_list"))
    assert listing.status_code == 200 and "tiny" in listing.content.decode()
    assert list(client.get(reverse("training:run_list"), {"status": "running"}).context["page"]) == []
    detail = client.get(reverse("training:run_detail", args=[run.pk]))
    html = detail.content.decode()
    assert detail.status_code == 200
    assert f'data-socket-path="/ws/runs/{run.pk}/"' in html
    assert "vendor/plotly.min.js" in html and 'id="cancel"' in html
    assert client.get(reverse("training:run_detail", args=[run.pk + 99])).status_code == 404


def test_plotly_is_served_by_the_site():
    from django.contrib.staticfiles import finders

    path = finders.find("vendor/plotly.min.js")
    assert path and Path(path).stat().st_size > 1_000_000


def test_cancel_and_resume_from_the_page(engineer, make_run):
    run = make_run()
    client = client_for(engineer)
    response = client.post(reverse("training:run_cancel", args=[run.pk]), follow=True)
    assert f"run {run.pk} cancelled" in response.content.decode()
    response = client.post(reverse("training:run_cancel", args=[run.pk]), follow=True)
    assert "only queued or running runs can be cancelled" in response.content.decode()
    response = client.post(reverse("training:run_resume", args=[run.pk]), follow=True)
    assert "wrote no checkpoint before it stopped" in response.content.decode()
    assert client.get(reverse("training:run_cancel", args=[run.pk])).status_code == 405


def _succeeded_run(make_run) -> TrainingRun:
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t")
    path = Path(run.out_dir) / "checkpoint.pt"
    path.parent.mkdir(parents=True)
    path.write_text("weights")
    Checkpoint.objects.create(run=run, step=300, path=str(path))
    return run_finish(run_id=run.pk, worker_token="t")


def test_evaluate_and_deploy_from_the_page(engineer, make_run):
    run = _succeeded_run(make_run)
    client = client_for(engineer)
    page = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert 'id="evaluate"' in page and 'id="deploy"' in page

    response = client.post(
        reverse("training:run_evaluate", args=[run.pk]), {"split": "test", "nb_episode": "0"}, follow=True
    )
    assert "nb_episode: Enter a whole number in digits 0-9; accepted: 1 to " in response.content.decode()
    response = client.post(
        reverse("training:run_evaluate", args=[run.pk]), {"split": "test", "nb_episode": "2"}, follow=True
    )
    assert "evaluation" in response.content.decode() and run.evaluations.count() == 1

    checkpoint = run.checkpoints.get()
    deploy = reverse("training:checkpoint_deploy", args=[run.pk, checkpoint.pk])
    response = client.post(deploy, {"comment": "go"})  # the evaluation has not finished: the guard refuses
    assert response.status_code == 400 and "on test days is queued, not finished" in response.content.decode()
    response = client.post(
        deploy, {"comment": "go", "override_reason": "deployed for the control-room drill"}, follow=True
    )
    assert "is now the deployed policy" in response.content.decode()
    assert Deployment.objects.get().checkpoint == checkpoint
    assert (
        client.post(reverse("training:checkpoint_deploy", args=[run.pk + 1, checkpoint.pk])).status_code
        == 404
    )


def test_admin_launches_a_run_with_the_same_checks(engineer):
    client = client_for(engineer)
    add_url = reverse("admin:training_trainingrun_add")
    assert client.get(add_url).status_code == 200
    data = _form_data(gamma="7")
    response = client.post(add_url, data)
    assert response.status_code == 200 and "gamma=7.0 is out of range" in response.content.decode()
    response = client.post(add_url, _form_data(label="via admin"))
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    assert run.label == "via admin" and run.status == JobStatus.QUEUED and run.task_id


def test_admin_bulk_cancel(engineer, make_run):
    runs = [make_run(), make_run()]
    response = client_for(engineer).post(
        reverse("admin:training_trainingrun_changelist"),
        {"action": "cancel_selected", "_selected_action": [run.pk for run in runs]},
        follow=True,
    )
    assert response.status_code == 200
    assert set(TrainingRun.objects.values_list("status", flat=True)) == {JobStatus.CANCELLED}
