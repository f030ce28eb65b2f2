"""Fixtures for the web application's tests: users per role, runs, refinements, socket helpers.

Run against Postgres (``DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres``); the tests
that start a second process (a db_worker) also need ``REDIS_URL``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth.models import AbstractUser
from django.test import Client

from ace_core.config import TrainConfig
from tests.webapp import fakes
from webapp.accounts.roles import ROLES
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.review.models import Refinement
from webapp.review.services import refinement_record
from webapp.training.models import TrainingRun
from webapp.training.services.runs import run_launch

PASSWORD = "a-long-test-password-123"
_names = itertools.count()


def tiny_config(**overrides: Any) -> TrainConfig:
    """The smallest run that exercises every event (refinements need an LLM setting)."""
    values = dict(
        env="l2rpn_case14_sandbox",
        steps=300,
        learning_starts=32,
        batch_size=32,
        log_every=50,
        checkpoint_every=100,
        llm="local",
        actor_every=50,
        critic_every=100,
        finetune_every=0,
    )
    values.update(overrides)
    return TrainConfig(**values)


@pytest.fixture(autouse=True)
def _web_settings(settings: Any, tmp_path: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins
    settings.GRIDACE_TRAINER = "tests.webapp.fakes.fake_train"
    settings.GRIDACE_EVALUATOR = "tests.webapp.fakes.fake_evaluate"
    settings.GRIDACE_RUNS_DIR = tmp_path / "runs"
    settings.GRIDACE_HEARTBEAT_SECONDS = 0.2
    settings.LIVE_RELAY_INTERVAL_SECONDS = 0.1
    return settings


@pytest.fixture
def make_user(db: Any) -> Callable[..., AbstractUser]:
    def make(role: str | None, username: str | None = None) -> AbstractUser:
        role_groups_sync()  # transactional tests empty the tables, groups included
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
def make_refinement() -> Callable[..., Refinement]:
    def make(run: TrainingRun, step: int = 50, **kwargs: Any) -> Refinement:
        return refinement_record(run_id=run.pk, event=fakes.refinement_event(step, **kwargs))

    return make


def socket_headers(user: AbstractUser | None, origin: str = "http://localhost") -> list[tuple[bytes, bytes]]:
    """Headers a browser sends: the Origin, and the session cookie of a signed-in user."""
    headers = [(b"origin", origin.encode())]
    if user is not None:
        client = client_for(user)
        cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
        headers.append((b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return headers


def communicator(path: str, headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    from webapp.asgi import application

    return WebsocketCommunicator(application, path, headers=headers)
