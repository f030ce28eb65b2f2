"""Guarded deploys and rollbacks: a run's policy is deployed when a finished evaluation on test
days shows the checked policy at least at do-nothing's survival, otherwise only with an override
and a written reason the audit keeps; a refusal names what is missing and writes nothing; a
rollback serves the deployment before the current one again, audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from tests.webapp.training.deploys import finished_evaluation, succeeded_run
from webapp.audit.models import AuditEntry
from webapp.training.errors import DeployGuardError, RunStateError
from webapp.training.models import Deployment
from webapp.training.selectors.deployments import deploy_check, deployment_current
from webapp.training.services.deployment import deployment_rollback, run_deploy
from webapp.training.services.evaluations import evaluation_request

pytestmark = pytest.mark.django_db

OVERRIDE = "the operators need the new topology actions tonight; test evaluation queued"


def _nothing_written(settings) -> None:
    assert not Deployment.objects.exists()
    assert not AuditEntry.objects.filter(action="checkpoint.deploy").exists()
    assert not (Path(settings.GRIDACE_RUNS_DIR) / "deployed").exists()


def test_a_deploy_without_a_finished_test_evaluation_is_refused_naming_it(make_run, engineer, settings):
    run = succeeded_run(make_run())
    with pytest.raises(DeployGuardError) as refused:
        run_deploy(run=run, user=engineer)
    message = " ".join(refused.value.messages)
    assert f"run {run.pk} has no finished evaluation on test days of its checkpoint at step 300" in message
    assert "accepted: a finished evaluation on test days" in message and "override" in message
    _nothing_written(settings)

    # an evaluation still queued, or one on validation days, is not enough either
    queued = evaluation_request(run=run, user=engineer, split="test", nb_episode=2)
    with pytest.raises(
        DeployGuardError, match=f"evaluation {queued.pk} of run {run.pk} on test days is queued"
    ):
        run_deploy(run=run, user=engineer)
    _nothing_written(settings)


def test_a_validation_evaluation_does_not_open_the_guard(make_run, engineer, settings):
    run = succeeded_run(make_run())
    finished_evaluation(run, engineer, checked=1.0, do_nothing=0.3, split="validation")
    assert "no finished evaluation on test days" in deploy_check(checkpoint=run.checkpoints.get()).refusal
    with pytest.raises(DeployGuardError):
        run_deploy(run=run, user=engineer)
    _nothing_written(settings)


def test_a_policy_below_do_nothing_on_test_days_is_refused_with_the_figures(make_run, engineer, settings):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.010, do_nothing=0.309)
    with pytest.raises(DeployGuardError) as refused:
        run_deploy(run=run, user=engineer, comment="looks fine")
    assert (
        f"in evaluation {evaluation.pk} (test days, 2 episodes) this run, checked by simulation survives "
        "0.010 of the steps on average, below do-nothing's 0.309"
    ) in refused.value.messages[0]
    _nothing_written(settings)


def test_an_evaluation_without_do_nothing_cannot_open_the_guard(make_run, engineer):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.9, do_nothing=None)
    check = deploy_check(checkpoint=run.checkpoints.get())
    assert not check.passed
    assert check.refusal == (
        f"evaluation {evaluation.pk} (test days, 2 episodes) has no do-nothing figure to compare with "
        "(do-nothing was not among its baselines)"
    )


def test_a_policy_at_least_at_do_nothing_deploys_and_the_audit_keeps_the_evaluation(make_run, engineer):
    run = succeeded_run(make_run())
    finished_evaluation(run, engineer, checked=0.1, do_nothing=0.3)  # older, below
    evaluation = finished_evaluation(run, engineer, checked=0.309, do_nothing=0.309, plain=0.1)
    check = deploy_check(checkpoint=run.checkpoints.get())
    assert check.passed and check.outcome.evaluation == evaluation  # the newest is read
    assert (check.outcome.agent, check.outcome.simulations_per_step) == ("ace-checked", 3.5)

    deployment = run_deploy(run=run, user=engineer, comment="beats do-nothing")
    assert deployment_current() == deployment
    assert deployment.evaluation == evaluation and deployment.override_reason == ""
    entry = AuditEntry.objects.get(action="checkpoint.deploy")
    assert entry.actor == engineer and entry.comment == "beats do-nothing"
    assert entry.after["guard"] == {
        "passed": True,
        "refusal": "",
        "evaluation": evaluation.pk,
        "policy": "ace-checked",
        "survival": 0.309,
        "do_nothing_survival": 0.309,
        "episodes": 2,
    }


def test_without_a_checked_result_the_plain_policy_is_compared(make_run, engineer):
    run = succeeded_run(make_run())
    finished_evaluation(run, engineer, checked=None, plain=0.5, do_nothing=0.4)
    check = deploy_check(checkpoint=run.checkpoints.get())
    assert check.passed and (check.outcome.agent, check.outcome.survival) == ("ace", 0.5)


def test_an_override_needs_a_written_reason_and_the_audit_keeps_it(make_run, engineer, settings):
    run = succeeded_run(make_run())
    with pytest.raises(
        DeployGuardError, match="the override's reason is 2 characters long; accepted: a written"
    ):
        run_deploy(run=run, user=engineer, override_reason=" ok ")
    _nothing_written(settings)

    deployment = run_deploy(run=run, user=engineer, override_reason=f"  {OVERRIDE}  ")
    assert deployment.override_reason == OVERRIDE and deployment.evaluation is None
    assert Path(deployment.path).read_text() == f'{{"run": {run.pk}, "step": 300}}'
    entry = AuditEntry.objects.get(action="checkpoint.deploy")
    assert entry.after["override_reason"] == OVERRIDE
    assert entry.after["guard"]["passed"] is False
    assert "has no finished evaluation on test days" in entry.after["guard"]["refusal"]


def test_only_a_succeeded_runs_last_checkpoint_is_deployed(make_run, engineer):
    run = make_run()
    with pytest.raises(RunStateError, match=f"run {run.pk} has no checkpoint to deploy"):
        run_deploy(run=run, user=engineer, override_reason=OVERRIDE)
    assert not Deployment.objects.exists()


def test_rollback_walks_back_through_the_deployments_and_is_audited(make_run, engineer, settings):
    first, second, third = (succeeded_run(make_run(label=name)) for name in ("first", "second", "third"))
    a = run_deploy(run=first, user=engineer, override_reason=OVERRIDE)
    b = run_deploy(run=second, user=engineer, override_reason=OVERRIDE)
    finished_evaluation(third, engineer, checked=0.5, do_nothing=0.4)
    c = run_deploy(run=third, user=engineer)
    assert (c.previous, b.previous, a.previous) == (b, a, None)

    back = deployment_rollback(deployment=c, user=engineer, comment="third misbehaves live")
    assert deployment_current() == back
    assert (back.checkpoint, back.path, back.rollback_of, back.previous) == (b.checkpoint, b.path, c, a)
    assert back.override_reason == OVERRIDE  # how the restored policy was let through
    entry = AuditEntry.objects.get(action="deployment.rollback")
    assert entry.actor == engineer and entry.comment == "third misbehaves live"
    assert entry.before == {"deployment": c.pk, "deployed_checkpoint": c.checkpoint_id}
    assert entry.after["restores"] == b.pk and entry.after["deployed_checkpoint"] == b.checkpoint_id

    # a second click on the page shown before the first is refused, not a second rollback
    with pytest.raises(RunStateError, match=f"deployment {c.pk} is no longer the deployed policy"):
        deployment_rollback(deployment=c, user=engineer)
    again = deployment_rollback(deployment=back, user=engineer)
    assert again.checkpoint == a.checkpoint and again.previous is None
    with pytest.raises(RunStateError, match=f"deployment {again.pk} has no deployment before it"):
        deployment_rollback(deployment=again, user=engineer)
    assert AuditEntry.objects.filter(action="deployment.rollback").count() == 2
    assert Deployment.objects.count() == 5


def test_a_rollback_to_a_missing_policy_file_is_refused(make_run, engineer):
    a = run_deploy(run=succeeded_run(make_run()), user=engineer, override_reason=OVERRIDE)
    b = run_deploy(run=succeeded_run(make_run()), user=engineer, override_reason=OVERRIDE)
    Path(a.path).unlink()
    with pytest.raises(RunStateError, match=f"the policy file of deployment {a.pk} .* is missing"):
        deployment_rollback(deployment=b, user=engineer)
    assert deployment_current() == b and not AuditEntry.objects.filter(action="deployment.rollback").exists()


# --- the pages ---


def test_the_confirmation_shows_the_guard_and_refuses_a_deploy_without_override(make_run, engineer, settings):
    run = succeeded_run(make_run())
    evaluation = finished_evaluation(run, engineer, checked=0.010, do_nothing=0.309)
    checkpoint = run.checkpoints.get()
    client = client_for(engineer)
    detail = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    url = reverse("training:checkpoint_deploy", args=[run.pk, checkpoint.pk])
    assert f'id="deploy" href="{url}"' in detail  # a link to the confirmation, not a one-click deploy

    page = client.get(url).content.decode()
    assert 'id="guard-refusal"' in page and "below do-nothing&#x27;s 0.309" in page
    assert 'id="guard-evaluation"' in page and 'id="id_override_reason"' in page
    assert f"Evaluation {evaluation.pk} on test days" in page

    refused = client.post(url, {"comment": "go"})
    assert refused.status_code == 400
    assert "deploy refused: in evaluation" in refused.content.decode()
    _nothing_written(settings)

    response = client.post(url, {"comment": "go", "override_reason": OVERRIDE}, follow=True)
    assert "is now the deployed policy" in response.content.decode()
    assert Deployment.objects.get().override_reason == OVERRIDE
    assert AuditEntry.objects.get(action="checkpoint.deploy").after["override_reason"] == OVERRIDE


def test_a_passing_guard_deploys_from_the_confirmation_without_override(make_run, engineer):
    run = succeeded_run(make_run())
    finished_evaluation(run, engineer, checked=0.8, do_nothing=0.309)
    url = reverse("training:checkpoint_deploy", args=[run.pk, run.checkpoints.get().pk])
    client = client_for(engineer)
    page = client.get(url).content.decode()
    assert 'id="guard-passed"' in page and 'id="id_override_reason"' not in page
    assert client.post(url, {"comment": ""}).status_code == 302
    assert Deployment.objects.get().evaluation is not None


def test_the_runs_list_marks_the_deployed_run_and_rolls_back_in_one_click(make_run, engineer):
    first, second = succeeded_run(make_run(label="first")), succeeded_run(make_run(label="second"))
    finished_evaluation(second, engineer, checked=0.412, do_nothing=0.309)
    run_deploy(run=first, user=engineer, override_reason=OVERRIDE)
    current = run_deploy(run=second, user=engineer)
    client = client_for(engineer)
    html = client.get(reverse("training:run_list")).content.decode()
    assert f'id="run-{second.pk}-deployed"' in html and f'id="run-{first.pk}-deployed"' not in html
    rollback = reverse("training:deployment_rollback", args=[current.pk])
    assert f'action="{rollback}"' in html and f"Roll back to run #{first.pk}" in html

    response = client.post(rollback, follow=True)
    assert (
        f"run {first.pk} (checkpoint at step 300) is the deployed policy again" in response.content.decode()
    )
    assert deployment_current().checkpoint.run == first
    html = response.content.decode()
    assert f'id="run-{first.pk}-deployed"' in html and 'id="rollback"' not in html  # nothing before it
    assert AuditEntry.objects.filter(action="deployment.rollback").count() == 1


def test_the_runs_list_shows_test_survival_against_do_nothing_and_simulations(make_run, engineer):
    evaluated, fresh = succeeded_run(make_run(label="evaluated")), make_run(label="fresh")
    finished_evaluation(evaluated, engineer, checked=0.412, do_nothing=0.309)
    html = client_for(engineer).get(reverse("training:run_list")).content.decode()
    start = html.index(f'id="run-{evaluated.pk}-test"')
    cell = html[start : html.index("</td>", start)]
    assert "0.412" in cell and "vs 0.309" in cell and 'class="ok"' in cell
    start = html.index(f'id="run-{evaluated.pk}-simulations"')
    assert "3.5" in html[start : html.index("</td>", start)]
    start = html.index(f'id="run-{fresh.pk}-test"')
    assert "—" in html[start : html.index("</td>", start)]


@pytest.mark.django_db(transaction=True)
def test_a_real_test_evaluation_decides_the_guard_by_its_figures(make_run, engineer, settings):
    """The real trainer and evaluator (db_worker): the guard reads the evaluation they wrote and
    lets the deploy through exactly when the checked policy survives at least as long as
    do-nothing there, naming both figures otherwise."""
    from tests.webapp.training.test_tasks import work_off_queue
    from webapp.training.models import TrainingRun

    settings.GRIDACE_BASELINES = ["do-nothing"]  # the real evaluator: a few seconds an agent here
    run = make_run(steps=100, label="real")
    work_off_queue()
    evaluation = evaluation_request(
        run=TrainingRun.objects.get(pk=run.pk), user=engineer, split="test", nb_episode=1
    )
    work_off_queue()
    evaluation.refresh_from_db()
    checked, do_nothing = (
        evaluation.results[name]["survival_mean"] for name in ("ace-checked", "do-nothing")
    )

    check = deploy_check(checkpoint=TrainingRun.objects.get(pk=run.pk).checkpoints.order_by("-id").first())
    assert check.outcome.evaluation == evaluation and check.outcome.agent == "ace-checked"
    assert (check.outcome.survival, check.outcome.do_nothing) == (checked, do_nothing)
    if checked >= do_nothing:
        assert run_deploy(run=run, user=engineer).evaluation == evaluation
    else:
        with pytest.raises(
            DeployGuardError, match=f"survives {checked:.3f} .* below do-nothing's {do_nothing:.3f}"
        ):
            run_deploy(run=run, user=engineer)
        assert not Deployment.objects.exists()
