"""Fixtures for the web application's tests: users per role, runs, refinements, socket helpers.

Workers run the real trainer (``ace_core.training.run``) and evaluator on tiny settings; the
refinements tests review are ones the real trainer reported. Run against Postgres
(``DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres``); the tests that start a second
process (a db_worker) also need ``REDIS_URL``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth.models import AbstractUser
from django.test import Client

from ace_core.config import TrainConfig
from ace_core.events import MemorySink, RefinementEvent
from tests.sandbox_settings import sandbox_settings
from webapp.accounts.roles import ROLES
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.review.models import Refinement
from webapp.review.services import refinement_record
from webapp.training.models import TrainingRun
from webapp.training.services.runs import run_launch

PASSWORD = "a-long-test-password-123"
_names = itertools.count()


def tiny_config(**overrides: Any) -> TrainConfig:
    """A run the real trainer finishes in seconds, with LLM refinements along the way.

    The 14-bus sandbox with a low rho threshold: the agent decides at every step, most first
    steps reward below ``r_bar``, so every actor pass has decisions to refine. ``llm="random"``
    is the built-in control (a uniform pick among the actor's candidates, the same simulation
    gate) and has no critic; :func:`local_llm` switches to the tiny local model, which adds
    critic passes and LoRA rounds.
    """
    values = sandbox_settings(
        steps=300,
        log_every=50,
        checkpoint_every=100,
        r_bar=0.5,
        llm="random",
        critic=False,
        actor_every=50,
        critic_every=100,
        critic_threshold=0.3,
        finetune_every=0,
        llm_budget=40,
    )
    values.update(overrides)
    return TrainConfig(**values)


def local_llm(model_dir: Path, **overrides: Any) -> dict[str, Any]:
    """Settings for the tiny local chat model: actor, critic and a LoRA round every 2 refinements."""
    return dict(
        llm="local",
        llm_model=str(model_dir),
        critic=True,
        actor_batch=2,
        actor_rounds=3,
        finetune_every=2,
        finetune_max_steps=1,
        **overrides,
    )


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The core's tiny random chat model (2-layer Llama, own tokenizer), with room for ACE's prompts."""
    from tests.ace_core.conftest import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-llm"), max_positions=8192)


@pytest.fixture(scope="session")
def trainer_refinements(tmp_path_factory: pytest.TempPathFactory) -> list[RefinementEvent]:
    """The refinements a tiny real run reports (the random control: no model to load)."""
    from ace_core.training import run

    sink = MemorySink()
    run(tiny_config(steps=100, actor_rounds=2), tmp_path_factory.mktemp("refinements-run"), sink)
    events = sink.of_type(RefinementEvent)
    assert any(e.accepted_by_simulation and len(e.rounds) > 1 for e in events), "no multi-round refinement"
    assert any(not e.accepted_by_simulation for e in events), "every refinement was accepted"
    return events


def trainer_refinement(events: list[RefinementEvent], step: int, accepted: bool = True) -> RefinementEvent:
    """A refinement the trainer reported (when accepted, one that took several rounds), placed at
    ``step`` with the id the trainer would give it there."""
    event = next(
        e for e in events if e.accepted_by_simulation == accepted and (not accepted or len(e.rounds) > 1)
    )
    return dataclasses.replace(event, step=step, refinement_id=f"r{step:05d}")


@pytest.fixture(autouse=True)
def _web_settings(settings: Any, tmp_path: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins
    settings.GRIDACE_TRAINER = "ace_core.training.run"
    settings.GRIDACE_EVALUATOR = "ace_core.evaluation.runner.evaluate"
    settings.GRIDACE_RUNS_DIR = tmp_path / "runs"
    settings.GRIDACE_HEARTBEAT_SECONDS = 0.2
    settings.LIVE_RELAY_INTERVAL_SECONDS = 0.1
    settings.GRIDACE_API_ADDRESS_RATE = "100000/min"  # every test client is 127.0.0.1
    return settings


@pytest.fixture
def make_user(db: Any) -> Callable[..., AbstractUser]:
    role_groups_sync()  # transactional tests empty the tables, groups included

    def make(role: str | None, username: str | None = None) -> AbstractUser:
        name = username or f"{role or 'norole'}{next(_names)}"
        if role is None:
            from django.contrib.auth import get_user_model

            return get_user_model().objects.create_user(username=name, password=PASSWORD)
        return user_create_with_role(username=name, password=PASSWORD, role=role)

    return make


@pytest.fixture
def engineer(make_user: Callable) -> AbstractUser:
    return make_user("engineer")


@pytest.fixture
def reviewer(make_user: Callable) -> AbstractUser:
    return make_user("reviewer")


@pytest.fixture
def operator(make_user: Callable) -> AbstractUser:
    return make_user("operator")


@pytest.fixture
def role_users(make_user: Callable) -> dict[str, AbstractUser]:
    users = {role: make_user(role) for role in ROLES}
    users["none"] = make_user(None)
    return users


def client_for(user: AbstractUser | None, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def make_run(engineer: AbstractUser) -> Callable[..., TrainingRun]:
    def make(launched_by: AbstractUser | None = None, label: str = "", **overrides: Any) -> TrainingRun:
        return run_launch(config=tiny_config(**overrides), launched_by=launched_by or engineer, label=label)

    return make


@pytest.fixture
def make_refinement(trainer_refinements: list[RefinementEvent]) -> Callable[..., Refinement]:
    def make(run: TrainingRun, step: int = 50, accepted: bool = True) -> Refinement:
        return refinement_record(run_id=run.pk, event=trainer_refinement(trainer_refinements, step, accepted))

    return make


def socket_headers(user: AbstractUser | None, origin: str = "http://localhost") -> list[tuple[bytes, bytes]]:
    """Headers a browser sends: the Origin, and the session cookie of a signed-in user."""
    # the socket is opened on the host the page came from (http://localhost by default)
    headers = [(b"origin", origin.encode()), (b"host", b"localhost")]
    if user is not None:
        client = client_for(user)
        cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
        headers.append((b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return headers


SOCKET_TIMEOUT = 30
"""seconds a test waits for a socket to connect, answer or close: generous, since under load (the
2 cores busy) channels' default of 1 s failed a connect that was merely slow; a test that passes
never waits it out"""


class PatientCommunicator(WebsocketCommunicator):
    """channels' test communicator with :data:`SOCKET_TIMEOUT` as the default wait for a connect
    and for what the server sends. ``receive_nothing`` keeps its short one (a passing test waits
    it out), and so does ``disconnect``: when its wait runs out it cancels the consumer quietly,
    whereas a long one lets a consumer on Redis end on the channel layer's read timeout."""

    async def connect(self, timeout: float = SOCKET_TIMEOUT) -> Any:
        return await super().connect(timeout)

    async def receive_output(self, timeout: float = SOCKET_TIMEOUT) -> Any:
        return await super().receive_output(timeout)

    async def receive_from(self, timeout: float = SOCKET_TIMEOUT) -> Any:
        return await super().receive_from(timeout)

    async def receive_json_from(self, timeout: float = SOCKET_TIMEOUT) -> Any:
        return await super().receive_json_from(timeout)


def communicator(path: str, headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    from webapp.asgi import application

    return PatientCommunicator(application, path, headers=headers)
