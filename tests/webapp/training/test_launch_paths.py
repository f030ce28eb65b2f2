"""Paths a user names on the launch form (``action_subset``, a model folder) are confined to the
runs and data folders; the refusal is the same whether a path outside exists or not, so the form
cannot be used to probe the server's files."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for, tiny_config
from webapp.training.models import TrainingRun

pytestmark = pytest.mark.django_db


def _launch(engineer, **overrides):
    data = {key: value for key, value in tiny_config().to_dict().items() if value is not False}
    data.update(overrides)
    return client_for(engineer).post(reverse("training:run_launch"), data)


def _errors(response, field: str) -> str:
    assert response.status_code == 400
    return " ".join(response.context["form"].errors[field])


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.GRIDACE_DATA_DIR = tmp_path / "data"
    settings.GRIDACE_DATA_DIR.mkdir()
    return settings.GRIDACE_DATA_DIR


def test_a_path_outside_gets_one_refusal_whether_it_exists_or_not(engineer, data_dir, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("60\n")
    refusals = {
        path: _errors(_launch(engineer, action_subset=path), "action_subset")
        for path in (
            "/etc/shadow",
            "/etc/no-such-file",
            str(outside),
            str(tmp_path / "missing.txt"),
            "../outside.txt",
            f"{data_dir}/../outside.txt",
        )
    }
    assert len(set(refusals.values())) == 1, refusals
    message = next(iter(refusals.values()))
    assert "must name a file inside the data folder" in message and str(data_dir) not in message
    # the form stops at this field: no other field's error tells the two apart either
    assert not TrainingRun.objects.exists()


def test_a_link_out_of_the_data_folder_is_refused(engineer, data_dir, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("60\n")
    (data_dir / "link.txt").symlink_to(outside)
    assert "must name a file inside" in _errors(_launch(engineer, action_subset="link.txt"), "action_subset")


def test_a_file_in_the_data_folder_is_accepted_by_its_resolved_path(engineer, data_dir):
    (data_dir / "subset.txt").write_text("60\n61\n")
    missing = _errors(_launch(engineer, action_subset="nothing.txt"), "action_subset")
    assert "'nothing.txt' is not a file in" in missing
    response = _launch(engineer, action_subset="subset.txt")
    assert response.status_code == 302, response.context and response.context["form"].errors
    assert TrainingRun.objects.get().config["action_subset"] == str(data_dir / "subset.txt")


def test_a_model_folder_outside_is_refused_and_a_model_id_is_kept(engineer, data_dir):
    for path in ("/etc", "/root/.ssh", "../models", "models/../../x"):
        assert "must be a model id such as org/name" in _errors(
            _launch(engineer, llm_model=path), "llm_model"
        )
    response = _launch(engineer, llm_model="HuggingFaceTB/SmolLM2-135M-Instruct")
    assert response.status_code == 302


def test_the_policy_a_run_starts_from_is_confined_too(engineer, data_dir, tmp_path):
    outside = tmp_path / "checkpoint.pt"
    outside.write_bytes(b"not a checkpoint")
    refusals = {
        path: _errors(_launch(engineer, init_from=path), "init_from")
        for path in ("/etc/shadow", str(outside), str(tmp_path / "missing.pt"))
    }
    assert len(set(refusals.values())) == 1, refusals
    assert "must name a file inside the data folder" in next(iter(refusals.values()))
