"""Property-based fuzzing of every websocket route: any id in the path, then any frames (text,
bytes, JSON) from a signed-in user of the route's role. The consumers only listen: a socket that
opened stays open and writes nothing, and none crashes (the route list comes from the router, so a
new socket cannot escape)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.webapp.conftest import communicator, socket_headers
from tests.webapp.fuzzing import EXAMPLES, JSON_VALUES, changed_tables, database_fingerprint, path_ids
from tests.webapp.test_route_coverage import ALLOWED, SOCKETS, objects  # noqa: F401
from webapp.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "fuzz"
SOCKET_ROUTES = sorted(pattern.name for pattern in websocket_urlpatterns)
FRAMES = st.lists(
    st.one_of(
        st.text(max_size=200).map(lambda text: {"text": text}),
        st.binary(max_size=200).map(lambda data: {"bytes": data}),
        JSON_VALUES.map(lambda value: {"text": json.dumps(value)}),
    ),
    max_size=4,
)
_seen: dict[str, dict[str, int]] = {}


def test_every_socket_route_is_fuzzed():
    assert set(SOCKET_ROUTES) == set(SOCKETS) and len(SOCKET_ROUTES) == 3


async def _exchange(path: str, headers: list, frames: list[dict]) -> str:
    socket = communicator(path, headers)
    connected, _ = await socket.connect()
    if not connected:
        return "refused"
    for frame in frames:
        # (send_to refuses empty frames; a browser can send them)
        await socket.send_input({"type": "websocket.receive", **frame})
    # read what the server sends for a moment: the socket must stay open
    while not await socket.receive_nothing(timeout=0.2):
        output = await socket.receive_output()
        assert output["type"] != "websocket.close", output
    await socket.disconnect()
    return "open"


@pytest.mark.parametrize("name", SOCKET_ROUTES)
def test_socket_never_crashes_and_writes_nothing(name, role_users, objects):  # noqa: F811
    role, template = SOCKETS[name]
    headers = socket_headers(role_users[ALLOWED.get(role, role)])
    real = {"ws_run": objects["run"].pk, "ws_live_session": objects["session"].pk}.get(name, 1)
    outcomes: Counter = Counter()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(pk=path_ids(real), frames=FRAMES)
    def example(pk: int, frames: list[dict]) -> None:
        path = template.format(run=pk, session=pk)
        before = database_fingerprint()
        outcomes[async_to_sync(_exchange)(path, headers, frames)] += 1
        assert changed_tables(before, database_fingerprint()) == [], path

    example()
    _seen[name] = dict(outcomes)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "sockets.json").write_text(json.dumps({"examples_per_route": EXAMPLES, "sockets": _seen}))
