"""The web process's what-if does not replay a session from step 0: asking at an earlier step and
then at the current one steps the grid no more than the steps played since the last question,
answers exactly as a fresh replay of that step would, and one session's request never waits for
another session's."""

from __future__ import annotations

import threading

import pytest
from grid2op.Environment import Environment

from ace_core.live import DO_NOTHING, LiveGrid, parse_action
from ace_core.live import envs as env_pool
from tests.webapp.operations.conftest import ENV, run_feed
from webapp.operations import mirror, selectors
from webapp.operations.services import action_apply

SPLIT = {"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}
PROBES = [
    SPLIT,
    {"kind": "line", "line": 4, "status": "disconnect"},
    {"kind": "topology", "substation": 5, "set": [[6, 2], [3, 2]]},
    {"kind": "nothing"},
]


class EnvCalls:
    """Counts the real env's steps and resets (grid2op's simulations run on another env class)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = 0
        self.resets = 0
        step, reset = Environment.step, Environment.reset

        def counted_step(env, *args, **kwargs):
            self.steps += 1
            return step(env, *args, **kwargs)

        def counted_reset(env, *args, **kwargs):
            self.resets += 1
            return reset(env, *args, **kwargs)

        monkeypatch.setattr(Environment, "step", counted_step)
        monkeypatch.setattr(Environment, "reset", counted_reset)


@pytest.fixture
def forget_mirrors():
    sessions = []
    yield sessions
    for session in sessions:
        mirror.forget(session)  # hands the web process's grids back to the pool


@pytest.mark.django_db
def test_a_what_if_at_step_0_then_now_does_not_replay_the_session(make_session, monkeypatch, forget_mirrors):
    session = make_session()
    forget_mirrors.append(session)
    run_feed(session, 12)
    session.refresh_from_db()
    mirror.what_if(session=session, step=12, action=SPLIT)  # opens the grid and catches up once

    calls = EnvCalls(monkeypatch)
    for step in (0, 12, 5, 12, 0, 11):
        outcome = mirror.what_if(session=session, step=step, action=SPLIT)
        assert outcome["step"] == step and outcome["legal"], outcome
    assert (calls.steps, calls.resets) == (0, 0)

    run_feed(session, 3)  # the worker plays on: only the new steps are played here
    session.refresh_from_db()
    calls.steps = calls.resets = 0
    assert mirror.what_if(session=session, step=15, action=SPLIT)["step"] == 15
    assert mirror.what_if(session=session, step=0, action=SPLIT)["step"] == 0
    assert (calls.steps, calls.resets) == (3, 0)


@pytest.mark.django_db
def test_a_what_if_at_any_step_is_the_what_if_of_a_fresh_replay_of_that_step(
    make_session, operator, forget_mirrors
):
    session = make_session()
    forget_mirrors.append(session)
    run_feed(session, 3)
    session.refresh_from_db()
    action_apply(session_id=session.pk, user=operator, step=3, action=SPLIT)
    run_feed(session, 5)
    session.refresh_from_db()
    applied = selectors.applied_actions(session_id=session.pk)
    # steps 4 to 8 are on the split grid
    assert (
        applied[3]["kind"] == "topology" and not any(applied[:3] + applied[4:]) and session.current_step == 8
    )

    answers = {
        (step, i): mirror.what_if(session=session, step=step, action=probe)
        for step in (8, 0, 4, 2, 5, 8)
        for i, probe in enumerate(PROBES)
    }
    fresh = LiveGrid(ENV, 0, 0, None)
    try:
        fresh.reset()
        for step in range(session.current_step + 1):
            if step:
                fresh.advance(
                    parse_action(applied[step - 1], fresh.space) if applied[step - 1] else DO_NOTHING
                )
            for i, probe in enumerate(PROBES):
                if (step, i) not in answers:
                    continue
                answer = dict(answers[(step, i)])
                assert (answer.pop("step"), answer.pop("stale")) == (step, step != 8)
                assert answer == fresh.what_if(parse_action(probe, fresh.space)).to_dict(), (step, probe)
    finally:
        fresh.close()


@pytest.mark.django_db(transaction=True)
def test_a_what_if_does_not_wait_for_another_sessions_what_if(make_session, monkeypatch, forget_mirrors):
    busy, other = make_session(), make_session(seed=1)
    forget_mirrors.extend([busy, other])
    run_feed(busy, 4)
    run_feed(other, 4)
    busy.refresh_from_db()
    other.refresh_from_db()
    entered, release = threading.Event(), threading.Event()
    recorded = selectors.applied_actions

    def paused_for_busy(*, session_id: int, **kwargs):
        if session_id == busy.pk:  # the busy session's request stops inside its catch-up
            entered.set()
            release.wait(timeout=30)
        return recorded(session_id=session_id, **kwargs)

    monkeypatch.setattr(selectors, "applied_actions", paused_for_busy)
    answers: dict[str, dict] = {}

    def ask(name, session):
        answers[name] = mirror.what_if(session=session, step=4, action=SPLIT)

    first = threading.Thread(target=ask, args=("busy", busy))
    second = threading.Thread(target=ask, args=("other", other))
    try:
        first.start()
        assert entered.wait(timeout=30)
        second.start()
        second.join(timeout=30)
        assert not second.is_alive() and answers["other"]["step"] == 4
        assert "busy" not in answers  # still paused: the other session did not wait for it
    finally:
        release.set()
        first.join(timeout=30)
        second.join(timeout=30)
    assert answers["busy"]["step"] == 4 and answers["busy"]["legal"]


@pytest.mark.django_db(transaction=True)
def test_a_grid_evicted_while_in_use_answers_then_goes_back_to_the_pool(
    make_session, monkeypatch, forget_mirrors
):
    monkeypatch.setattr(mirror, "MAX_GRIDS", 1)
    busy, other = make_session(), make_session(seed=1)
    forget_mirrors.extend([busy, other])
    run_feed(busy, 4)
    run_feed(other, 4)
    busy.refresh_from_db()
    other.refresh_from_db()
    expected = mirror.what_if(session=busy, step=4, action=SPLIT)
    mirror.forget(busy)
    entered, release = threading.Event(), threading.Event()
    recorded = selectors.applied_actions
    grids: list = []

    def paused_for_busy(*, session_id: int, **kwargs):
        if session_id == busy.pk:  # the busy request holds its grid, paused inside its catch-up
            grids.extend(m.history.grid for m in mirror._mirrors.values() if m.history is not None)
            entered.set()
            release.wait(timeout=30)
        return recorded(session_id=session_id, **kwargs)

    monkeypatch.setattr(selectors, "applied_actions", paused_for_busy)
    answers: dict[str, dict] = {}
    first = threading.Thread(
        target=lambda: answers.update(busy=mirror.what_if(session=busy, step=4, action=SPLIT))
    )
    try:
        first.start()
        assert entered.wait(timeout=30)
        busy_env = grids[0].env
        # the other session's grid evicts the busy one (one grid per process here)
        assert mirror.what_if(session=other, step=4, action=SPLIT)["step"] == 4
        assert busy_env not in env_pool._pool.get(ENV, [])  # not closed under the busy request's feet
    finally:
        release.set()
        first.join(timeout=30)
    assert answers["busy"] == expected
    assert any(env is busy_env for env in env_pool._pool.get(ENV, []))  # closed by its last user
    assert mirror.what_if(session=busy, step=4, action=SPLIT) == expected  # reopened on demand
