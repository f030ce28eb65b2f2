"""Every URL route and every websocket route refuses anonymous and wrong-role users.

The tables below must name every route the site has (a test enumerates the resolver and the
websocket router and fails on any route missing here), so a new page cannot ship ungated.
Anonymous users are sent to the login page (or refused, for websockets); signed-in users
without the route's role get 403; the role the route is for gets in.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.webapp.conftest import client_for, communicator, socket_headers
from webapp.routing import websocket_urlpatterns

PUBLIC = {"accounts:login", "accounts:logout", "favicon"}
"""reachable signed out by design (logging out when signed out just returns to the login page;
the favicon redirects to its static file)"""
SCRAPERS = {"monitoring:metrics"}
"""gated by address or token rather than by role (tests/webapp/monitoring/test_metrics.py)"""

API_NAMESPACE = "api_v1"
"""/api/v1/: its schema and docs are public; every operation needs a token of the right role,
which tests/webapp/api/test_schema.py proves for each operation of the served schema"""

# name -> (the role it is for, the method to try)
ROUTES: dict[str, tuple[str, str]] = {
    "accounts:home": ("any", "get"),
    "training:run_list": ("engineer", "get"),
    "training:run_launch": ("engineer", "get"),
    "training:run_compare": ("engineer", "get"),
    "training:run_detail": ("engineer", "get"),
    "training:run_cancel": ("engineer", "post"),
    "training:run_resume": ("engineer", "post"),
    "training:run_evaluate": ("engineer", "post"),
    "training:run_notes": ("engineer", "post"),
    "training:run_metrics_csv": ("engineer", "get"),
    "training:run_episodes_csv": ("engineer", "get"),
    "training:checkpoint_deploy": ("engineer", "post"),
    "training:deployment_rollback": ("engineer", "post"),
    "training:mine_list": ("engineer", "get"),
    "training:mine_launch": ("engineer", "get"),
    "training:mine_detail": ("engineer", "get"),
    "training:mine_progress": ("engineer", "get"),
    "review:queue": ("reviewer", "get"),
    "review:refinement_detail": ("reviewer", "get"),
    "review:refinement_decide": ("reviewer", "post"),
    "review:shaping_list": ("reviewer", "get"),
    "audit:entry_list": ("engineer", "get"),
    "audit:export": ("reviewer", "get"),
    "operations:session_list": ("viewer", "get"),
    "operations:session_start": ("engineer", "get"),
    "operations:console": ("viewer", "get"),
    "operations:replay": ("viewer", "get"),
    "operations:fork": ("engineer", "post"),
    "operations:summary": ("viewer", "get"),
    "operations:export": ("viewer", "get"),
    "operations:day_compare": ("viewer", "get"),
    "operations:day_play": ("controller", "post"),
    "operations:control": ("controller", "post"),
    "operations:decide": ("operator", "post"),
    "operations:what_if": ("operator", "post"),
    "operations:apply": ("operator", "post"),
    "operations:alarm_ack": ("operator", "post"),
    "operations:explain": ("operator", "post"),
    "api:token_list": ("any", "get"),
    "api:token_revoke": ("any", "post"),
    "accounts:lockout_list": ("admin", "get"),
    "accounts:lockout_lift": ("admin", "post"),
}
# Roles refused on each route (beyond anonymous): every role the route is not for.
WRONG_ROLES = {
    "any": ["none"],
    "engineer": ["operator", "reviewer", "none"],
    "reviewer": ["operator", "engineer", "none"],
    "operator": ["engineer", "reviewer", "none"],
    "admin": ["operator", "engineer", "reviewer", "none"],
    # the live pages: operators and engineers watch and control, reviewers do not
    "viewer": ["reviewer", "none"],
    "controller": ["reviewer", "none"],
}
# the role let in when a route is for several
ALLOWED = {"any": "engineer", "viewer": "operator", "controller": "operator"}
# audit:entry_list is for engineers and reviewers: refuse only the others.
WRONG_ROLES_BY_ROUTE = {"audit:entry_list": ["operator", "none"]}

SOCKETS = {
    "ws_run": ("engineer", "/ws/runs/{run}/"),
    "ws_review_queue": ("reviewer", "/ws/review/"),
    "ws_live_session": ("viewer", "/ws/live/{session}/"),
}


def _named_routes(patterns: list, namespace: str = "") -> set[str]:
    names = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace in ("admin", API_NAMESPACE):
                continue
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names |= _named_routes(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern):
            assert pattern.name, f"unnamed route {pattern.pattern}: name it and add it to ROUTES"
            names.add(f"{namespace}{pattern.name}")
    return names


def test_the_tables_name_every_route():
    assert _named_routes(get_resolver().url_patterns) == set(ROUTES) | PUBLIC | SCRAPERS
    assert {pattern.name for pattern in websocket_urlpatterns} == set(SOCKETS)


@pytest.fixture
def objects(make_run, make_refinement, engineer, role_users) -> dict[str, Any]:
    from django.utils import timezone

    from webapp.operations.models import Alarm, LiveSession
    from webapp.training.models import Checkpoint, Deployment

    run = make_run()
    refinement = make_refinement(run)
    checkpoint = Checkpoint.objects.create(run=run, step=100, path="/nowhere.pt")
    # rows only: the routes' gates are under test here, not the live grid
    deployment = Deployment.objects.create(
        checkpoint=checkpoint, deployed_by=engineer, deployed_at=timezone.now(), path="/nowhere.pt"
    )
    session = LiveSession.objects.create(
        env="l2rpn_case14_sandbox",
        scenario_index=0,
        deployment=deployment,
        created_by=engineer,
        status="stopped",
    )
    alarm = Alarm.objects.create(
        session=session, step=0, kind="overload", message="m", raised_at=timezone.now()
    )
    rec = stand_in_recommendation(session)
    from webapp.api.services import token_create

    # the allowed user of the route table ("any" lets an engineer in) revokes their own token
    token, _ = token_create(user=role_users["engineer"], name="route test")
    from axes.models import AccessAttempt

    attempt = AccessAttempt.objects.create(
        username="someone", ip_address="10.9.9.9", user_agent="", failures_since_start=1
    )
    return {
        "attempt": attempt,
        "token": token,
        "mine": stand_in_mine(engineer),
        "run": run,
        "refinement": refinement,
        "checkpoint": checkpoint,
        "deployment": deployment,
        "session": session,
        "alarm": alarm,
        "rec": rec,
    }


def stand_in_recommendation(session):
    """A recommendation row for building the routes' URLs (the gates are under test, not the grid)."""
    from webapp.operations.models import LiveRecommendation

    return LiveRecommendation.objects.create(
        session=session,
        step=0,
        rank=0,
        action={"kind": "nothing"},
        description="do nothing",
        confidence=1.0,
        source="policy",
        max_rho_before=0.5,
    )


def stand_in_mine(launched_by):
    """A failed mine launch, for building the mine pages' URLs (its page shows the error)."""
    from dataclasses import asdict

    from ace_core.imitation.mining import MineSpec
    from webapp.training.models import Mine

    spec = MineSpec(env="rte_case14_realistic", expert="greedy", seeds=1, episode_length=288)
    return Mine.objects.create(
        name="rte_case14_realistic-train-standin",
        env="rte_case14_realistic",
        spec=asdict(spec),
        status="failed",
        error="MineError: a stand-in",
        out_dir="/nowhere/rte_case14_realistic-train-standin",
        launched_by=launched_by,
    )


_NO_ARGS = {"operations:session_list", "operations:session_start", "operations:day_compare"}


def _url(name: str, objects: dict[str, Any]) -> str:
    run, refinement, checkpoint = objects["run"], objects["refinement"], objects["checkpoint"]
    if name == "training:run_compare":  # the runs to compare are in the query string
        return f"{reverse(name)}?run={run.pk}"
    args = {
        "training:run_detail": [run.pk],
        "training:run_cancel": [run.pk],
        "training:run_resume": [run.pk],
        "training:run_evaluate": [run.pk],
        "training:run_notes": [run.pk],
        "training:run_metrics_csv": [run.pk],
        "training:run_episodes_csv": [run.pk],
        "training:checkpoint_deploy": [run.pk, checkpoint.pk],
        "training:deployment_rollback": [objects["deployment"].pk],
        "review:refinement_detail": [run.pk, refinement.pk],
        "review:refinement_decide": [run.pk, refinement.pk],
        "operations:alarm_ack": [objects["session"].pk, objects["alarm"].pk],
        "operations:explain": [objects["session"].pk, objects["rec"].pk],
        "api:token_revoke": [objects["token"].pk],
        "accounts:lockout_lift": [objects["attempt"].pk],
        "training:mine_detail": [objects["mine"].name],
        "training:mine_progress": [objects["mine"].name],
    }.get(name, [objects["session"].pk] if name.startswith("operations:") and name not in _NO_ARGS else [])
    return reverse(name, args=args)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_refuses_anonymous_and_wrong_roles(name, role_users, objects):
    role, method = ROUTES[name]
    url = _url(name, objects)

    anonymous = getattr(client_for(None), method)(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("accounts:login")), name

    for wrong in WRONG_ROLES_BY_ROUTE.get(name, WRONG_ROLES[role]):
        response = getattr(client_for(role_users[wrong]), method)(url)
        assert response.status_code == 403, (name, wrong)

    allowed = role_users[ALLOWED.get(role, role)]
    response = getattr(client_for(allowed), method)(url)
    # In (an empty POST may be refused for its content: 400, never for the user: 403).
    assert response.status_code in (200, 302, 400), (name, response.status_code)
    if response.status_code == 302:
        assert not response["Location"].startswith(reverse("accounts:login")), name


@pytest.mark.django_db
def test_the_admin_refuses_anonymous_and_operators(role_users):
    for user in (None, role_users["operator"], role_users["none"]):
        response = client_for(user).get(reverse("admin:index"))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert (
        client_for(role_users["reviewer"]).get(reverse("admin:training_trainingrun_add")).status_code == 403
    )
    assert (
        client_for(role_users["engineer"]).get(reverse("admin:review_refinement_changelist")).status_code
        == 403
    )


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", sorted(SOCKETS))
async def test_socket_refuses_anonymous_and_wrong_roles(name, role_users, objects):
    role, template = SOCKETS[name]
    path = template.format(run=objects["run"].pk, session=objects["session"].pk)
    for wrong in [None, *(role_users[w] for w in WRONG_ROLES[role])]:
        socket = communicator(path, await sync_to_async(socket_headers)(wrong))
        connected, _ = await socket.connect()
        assert not connected, (name, wrong)
    socket = communicator(path, await sync_to_async(socket_headers)(role_users[ALLOWED.get(role, role)]))
    connected, _ = await socket.connect()
    assert connected, name
    await socket.disconnect()
