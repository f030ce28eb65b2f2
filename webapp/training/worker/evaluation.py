"""Evaluating a finished run, as the ``evaluate_run`` task runs it inside ``db_worker``.

The evaluator (``settings.GRIDACE_EVALUATOR``, normally :func:`ace_core.evaluation.runner.evaluate`) runs
once for the run's policy, once for it checked by simulation as deployed
(``settings.GRIDACE_CHECKED_AGENT``, or the grid's own check when unset) and once per baseline in
``settings.GRIDACE_BASELINES``, on the same episodes, cut as the run's training days were (its
``episode_length``); each result is stored under the agent's name.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH
from webapp.jobs.services import job_fail, job_finish, job_start
from webapp.training.models import Evaluation
from webapp.training.selectors.evaluations import RUN_AGENT, RUN_CHECKED_AGENT
from webapp.training.services.deployment import policy_path
from webapp.training.services.events import jsonable
from webapp.training.worker.attempt import error_text
from webapp.training.worker.heartbeat import Heartbeat


def agent_spec_for(evaluation: Evaluation) -> str:
    """How :func:`ace_core.agents.loading.load_agent` names the run's policy: ``sac:<policy file>``, the
    best validated policy when the run validated (what a deployment serves), else the checkpoint,
    with the options its grid's plain policy is shown with (``ace_core.agents.deployed.deployed_plain``)."""
    from ace_core.agents.deployed import deployed_plain

    return str(deployed_plain(evaluation.run.env, _policy(evaluation)))


def _policy(evaluation: Evaluation) -> Path:
    return policy_path(Path(evaluation.checkpoint.path))


def run_agents(evaluation: Evaluation) -> dict[str, str]:
    """Result name -> agent spec: the run's policy plain, checked by simulation, then the baselines."""
    from ace_core.agents.deployed import deployed_checked
    from ace_core.agents.spec import AgentSpec

    agents = {RUN_AGENT: agent_spec_for(evaluation)}
    check = settings.GRIDACE_CHECKED_AGENT
    if check is None:
        agents[RUN_CHECKED_AGENT] = str(deployed_checked(evaluation.run.env, _policy(evaluation)))
    elif check:
        agents[RUN_CHECKED_AGENT] = str(AgentSpec.with_options("sac-checked", _policy(evaluation), check))
    return {**agents, **{name: name for name in settings.GRIDACE_BASELINES}}


def evaluate_attempt(*, evaluation_id: int, worker_id: str = "") -> dict[str, Any]:
    """Run a queued evaluation to its end, its heartbeat stamped while it runs (a worker that dies
    leaves it silent, and the watchdog fails it: :func:`webapp.training.services.recovery.evaluations_recover_stale`);
    returns the task's result."""
    token = uuid.uuid4().hex
    evaluation = job_start(model=Evaluation, job_id=evaluation_id, worker_token=token, worker_id=worker_id)
    if evaluation is None:
        return {"evaluation": evaluation_id, "skipped": "evaluation is no longer queued"}
    run = evaluation.run
    out_root = Path(run.out_dir) / "evaluations" / str(evaluation.pk)
    heartbeat = Heartbeat(
        model=Evaluation,
        job_id=evaluation_id,
        worker_token=token,
        interval=settings.GRIDACE_HEARTBEAT_SECONDS,
    ).start()
    try:
        agents = run_agents(evaluation)  # a bad GRIDACE_CHECKED_AGENT fails the evaluation
        evaluate = import_string(settings.GRIDACE_EVALUATOR)
        # the days cut as the run's own were: another cut's test days can hold its training days
        cut = {"episode_length": run.config.get("episode_length", DEFAULT_EPISODE_LENGTH)}
        results = {}
        for name, spec in agents.items():
            results[name] = evaluate(
                run.env, spec, evaluation.split, evaluation.nb_episode, out_root / name, **cut
            )
    except BaseException as error:
        heartbeat.stop()
        job_fail(model=Evaluation, job_id=evaluation_id, worker_token=token, error=error_text(error))
        raise
    heartbeat.stop()
    job_finish(model=Evaluation, job_id=evaluation_id, worker_token=token, results=jsonable(results))
    return {"evaluation": evaluation_id, "agents": list(results)}
