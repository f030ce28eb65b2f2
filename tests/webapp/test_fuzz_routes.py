"""Property-based fuzzing of every route of the URL map (see :mod:`tests.webapp.fuzzing`): no
input gives a 500, and a refused request (4xx, or a redirect with an error message) writes
nothing, the audit log included.

Each route and method runs ``GRIDACE_FUZZ_EXAMPLES`` examples (default 20) as the role it is
for; the status codes seen are written to ``artifacts/fuzz/routes.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.webapp.conftest import PASSWORD, client_for
from tests.webapp.fuzzing import (
    EXAMPLES,
    FORMS,
    body_kind,
    changed_tables,
    database_fingerprint,
    form_data,
    json_bodies,
    methods,
    path_arguments,
    query_data,
    routes,
    url_for,
)
from tests.webapp.operations.conftest import deployment, make_session, policy_file, run_feed  # noqa: F401
from tests.webapp.test_route_coverage import ALLOWED, PUBLIC, ROUTES

pytestmark = pytest.mark.django_db
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "fuzz"
ROUTE_METHODS = [(name, method) for name, pattern in sorted(routes().items()) for method in methods(pattern)]
_seen: dict[str, dict[str, int]] = {}


def test_every_route_of_the_url_map_is_fuzzed_with_each_of_its_methods():
    names = {name for name, _ in ROUTE_METHODS}
    assert names == set(routes()) and len(names) >= 27
    assert all(methods(pattern) for pattern in routes().values()), "a route without GET or POST"
    assert set(FORMS) <= names


def test_the_fingerprint_sees_a_written_row_in_its_own_table_only(engineer):
    before = database_fingerprint()
    assert changed_tables(before, database_fingerprint()) == []
    engineer.first_name = "changed"
    engineer.save(update_fields=["first_name"])
    assert changed_tables(before, database_fingerprint()) == [get_user_model()._meta.label_lower]


@pytest.fixture
def fuzz_objects(make_session, make_refinement) -> dict[str, dict[str, int]]:  # noqa: F811
    from webapp.operations.models import Alarm

    session = make_session()
    run_feed(session, 1)
    run = session.deployment.checkpoint.run
    refinement = make_refinement(run)
    alarm = Alarm.objects.create(
        session=session, step=1, kind="overload", message="m", raised_at=timezone.now()
    )
    rec = session.recommendations.first()
    run_ids = {"pk": run.pk}
    return {
        "training:checkpoint_deploy": {"run_pk": run.pk, "pk": session.deployment.checkpoint.pk},
        "training:deployment_rollback": {"pk": session.deployment.pk},
        "training": run_ids,
        "review": {"run_pk": run.pk, "pk": refinement.pk},
        "operations": {"pk": session.pk, "alarm_pk": alarm.pk, "rec_pk": rec.pk},
    }


def _client(name: str, role_users: dict[str, Any]) -> Client:
    if name in PUBLIC:
        return Client()
    if name in ROUTES:
        role = ROUTES[name][0]
        return client_for(role_users[ALLOWED.get(role, role)])
    root = get_user_model().objects.create_superuser(f"root-{name}", password=PASSWORD)
    return client_for(root)  # a route the gate table does not know yet: fuzz it past every gate


def _send(client: Client, method: str, url: str, kind: str, body: Any):
    if kind == "json":
        return client.post(url, data=body, content_type="application/json")
    if kind == "form":
        return client.post(url, body)
    return client.get(url, body)


def _refused(response: Any) -> bool:
    """A 4xx, or a page that redirects with an error message (the POST actions of run pages)."""
    if response.status_code >= 400:
        return True
    queued = getattr(response.wsgi_request, "_messages", None)
    return any(message.level >= messages.ERROR for message in getattr(queued, "_queued_messages", []))


def _path_kwargs(name: str, pattern: Any, objects: dict[str, dict[str, int]]) -> st.SearchStrategy:
    return path_arguments(pattern, objects.get(name) or objects.get(name.split(":")[0], {}))


@pytest.mark.parametrize(("name", "method"), ROUTE_METHODS)
def test_route_never_fails_and_refusals_write_nothing(
    name, method, fuzz_objects, role_users, settings_fixture
):
    pattern = routes()[name]
    kind = body_kind(pattern, method)
    body = {"json": json_bodies(), "form": form_data(FORMS.get(name)), "query": query_data()}[kind]
    client = _client(name, role_users)
    statuses: Counter = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(kwargs=_path_kwargs(name, pattern, fuzz_objects), data=body)
    def example(kwargs: dict[str, int], data: Any) -> None:
        url = url_for(name, pattern, kwargs)
        before = database_fingerprint()
        note(f"{method.upper()} {url} {data!r}"[:3000])  # shown with a failing example
        response = _send(client, method, url, kind, data)
        statuses[response.status_code] += 1
        assert response.status_code < 500, (url, data)
        if _refused(response):
            assert changed_tables(before, database_fingerprint()) == [], (url, data, response.status_code)

    example()
    _seen[f"{name} {method.upper()} ({kind})"] = dict(sorted(statuses.items()))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "routes.json").write_text(
        json.dumps({"examples_per_route": EXAMPLES, "routes": _seen}, indent=1)
    )


@pytest.fixture
def settings_fixture(settings):
    settings.GRIDACE_DATA_DIR = settings.GRIDACE_RUNS_DIR
    return settings
