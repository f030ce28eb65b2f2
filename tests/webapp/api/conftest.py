"""Fixtures for the HTTP API: tokens per role and a client that sends them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client

from webapp.api.services import token_create


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each operation schemathesis tests its own node id.

    schemathesis names its items ``test[GET /api/v1/runs]`` but builds them with the bare test
    name as ``originalname``, from which pytest 9 makes the node id: all the operations share
    one id. pytest-xdist schedules by node id, so `make test` would run only one of them.
    """
    from schemathesis.pytest.plugin import SchemathesisFunction

    for item in items:
        if isinstance(item, SchemathesisFunction) and item.operation_label:
            item._id = item.parent.id.child(item.originalname).with_params(item.operation_label)


class ApiClient:
    """django's test client with ``Authorization: Bearer <token>`` and JSON bodies."""

    def __init__(self, token: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/api/v1{path}", params, headers=self.headers)

    def post(self, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(f"/api/v1{path}", data, content_type="application/json", headers=self.headers)


@pytest.fixture
def make_token() -> Callable[..., str]:
    def make(user: AbstractUser, name: str = "test client", **kwargs: Any) -> str:
        return token_create(user=user, name=name, **kwargs)[1]

    return make


@pytest.fixture
def api_as(make_token: Callable[..., str]) -> Callable[[AbstractUser], ApiClient]:
    """A client with a fresh token of ``user``."""
    return lambda user: ApiClient(make_token(user))


def assert_error_shape(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"error", "field", "accepted"}, body
    assert isinstance(body["error"], str) and body["error"]
    return body


# the live console's fixtures (a deployed policy, sessions fed by a real feed worker)
from tests.webapp.operations.conftest import deployment, make_session, policy_file  # noqa: E402, F401

# the mines' fixtures (one real tiny mine, the mines folder holding it)
from tests.webapp.training.conftest import finished_mine, mines_dir  # noqa: E402, F401
