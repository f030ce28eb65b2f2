"""Websockets: the Origin must be exactly the site's (scheme, host and port) or a trusted origin,
and an open socket closes within seconds of its session ending (logout, password change,
expiry)."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from tests.webapp.conftest import client_for, communicator
from webapp.live import relay
from webapp.routing import NOT_FOUND_CLOSE_CODE
from webapp.socket_security import SESSION_ENDED, session_still_valid, sessions_still_valid

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def _signed_in(user):
    client = client_for(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return client, cookie


def _headers(cookie: str, origin: str, host: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"origin", origin.encode()),
        (b"host", host.encode()),
        (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]


async def _opens(cookie: str, origin: str, host: str = "localhost", scheme: str | None = None) -> bool:
    socket = communicator("/ws/review/", _headers(cookie, origin, host))
    if scheme:
        socket.scope["scheme"] = scheme
    connected, _ = await socket.connect()
    if connected:
        await socket.disconnect()
    return connected


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://localhost:3000", "localhost", None),  # another app on the same host
        ("http://127.0.0.1:9999", "127.0.0.1:8000", None),  # another port
        ("https://localhost", "localhost", None),  # https page, plain socket
        ("http://localhost:8000", "localhost:8000", "wss"),  # plain page, TLS socket
        ("http://evil.example", "evil.example", None),  # a host this site does not serve
        ("http://localhost.evil.example", "localhost", None),
        ("null", "localhost", None),
        ("http://localhost/path", "localhost", None),
    ],
)
async def test_a_foreign_origin_is_refused(reviewer, origin, host, scheme):
    _, cookie = await sync_to_async(_signed_in)(reviewer)
    assert not await _opens(cookie, origin, host, scheme)


async def test_the_sites_own_origin_and_trusted_origins_are_accepted(reviewer, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://gridace.example.org"]
    _, cookie = await sync_to_async(_signed_in)(reviewer)
    assert await _opens(cookie, "http://localhost", "localhost")
    assert await _opens(cookie, "http://127.0.0.1:8000", "127.0.0.1:8000")
    assert await _opens(cookie, "https://localhost:8443", "localhost:8443", scheme="wss")
    assert await _opens(cookie, "https://localhost", "localhost:443", scheme="wss")
    # behind a proxy the socket's Host is internal; the public origin is trusted by configuration
    assert await _opens(cookie, "https://gridace.example.org", "localhost:8000")
    assert not await _opens(cookie, "http://gridace.example.org", "localhost:8000")


async def _closed_within(socket, seconds: float) -> dict:
    """Read until the server closes the socket; fail if it stays open ``seconds``."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, "the socket is still open"
        output = await socket.receive_output(timeout=remaining)
        if output["type"] == "websocket.close":
            return output


async def _open_for(socket, seconds: float) -> None:
    """Read what the socket sends for ``seconds``; fail if the server closes it."""
    deadline = asyncio.get_running_loop().time() + seconds
    while (remaining := deadline - asyncio.get_running_loop().time()) > 0:
        # (receive_output's timeout would cancel the application: wait without it)
        if await socket.receive_nothing(timeout=remaining):
            return
        output = await socket.receive_output()
        assert output["type"] != "websocket.close", output


def _end_by_logout(client, user, cookie):
    client.post(reverse("accounts:logout"))


def _end_by_password_change(client, user, cookie):
    user.set_password("another-long-password-456")
    user.save()


def _end_by_expiry(client, user, cookie):
    Session.objects.filter(session_key=cookie).update(
        expire_date=timezone.now() - datetime.timedelta(seconds=1)
    )


@pytest.mark.parametrize("end", [_end_by_logout, _end_by_password_change, _end_by_expiry])
async def test_an_open_socket_closes_when_its_session_ends(reviewer, settings, end):
    settings.GRIDACE_SOCKET_SESSION_CHECK_SECONDS = 0.5
    client, cookie = await sync_to_async(_signed_in)(reviewer)
    socket = communicator("/ws/review/", _headers(cookie, "http://localhost", "localhost"))
    connected, _ = await socket.connect()
    assert connected
    await _open_for(socket, 1.2)  # a few checks pass while the session is valid
    await sync_to_async(end)(client, reviewer, cookie)
    closed = await _closed_within(socket, 5)
    assert closed["code"] == SESSION_ENDED
    await socket.disconnect()


async def test_the_session_check_goes_on_after_a_database_error(reviewer, settings, monkeypatch):
    # a check during a database restart killed the checking task: the socket then stayed open
    # after a logout
    settings.GRIDACE_SOCKET_SESSION_CHECK_SECONDS = 0.3
    client, cookie = await sync_to_async(_signed_in)(reviewer)
    errors = [OperationalError("the database system is shutting down")]

    def check_after_a_restart(pairs):
        if errors:
            raise errors.pop()
        return sessions_still_valid(pairs)

    monkeypatch.setattr(relay, "sessions_still_valid", check_after_a_restart)
    socket = communicator("/ws/review/", _headers(cookie, "http://localhost", "localhost"))
    connected, _ = await socket.connect()
    assert connected
    await _open_for(socket, 1.0)  # the failed check closes nothing; the next ones pass
    assert not errors
    await sync_to_async(_end_by_logout)(client, reviewer, cookie)
    closed = await _closed_within(socket, 5)
    assert closed["code"] == SESSION_ENDED
    await socket.disconnect()


async def test_one_check_answers_for_every_socket_as_each_check_would(reviewer, operator, make_user):
    """The process's sockets are checked all at once (one query for the sessions, one for the
    users): the same answers as Django's own check, session by session."""

    def sessions():
        users = {"ok": reviewer, "op": operator}
        users |= {name: make_user("reviewer") for name in ("logged out", "password", "expired", "inactive")}
        signed_in = {name: _signed_in(user) for name, user in users.items()}
        _end_by_logout(signed_in["logged out"][0], None, None)
        _end_by_password_change(None, users["password"], None)
        _end_by_expiry(None, None, signed_in["expired"][1])
        users["inactive"].is_active = False
        users["inactive"].save()
        pairs = {(signed_in[name][1], user.pk) for name, user in users.items()}
        # another user's session, one that never existed, none at all
        return pairs | {
            (signed_in["ok"][1], operator.pk),
            ("no-such-session", reviewer.pk),
            (None, reviewer.pk),
        }

    pairs = await sync_to_async(sessions)()
    together = await sync_to_async(sessions_still_valid)(pairs)
    one_by_one = {pair: await sync_to_async(session_still_valid)(*pair) for pair in pairs}
    assert together == one_by_one
    assert sorted(together.values()).count(True) == 2  # the reviewer's and the operator's own


@pytest.mark.django_db  # no session, no table touched: no need to empty the tables after
@pytest.mark.parametrize("path", ["/ws/nonexistent/", "/ws/live/3", "/ws/runs/x/", "/ws/"])
async def test_an_unknown_path_closes_with_4404_without_an_error(path, caplog):
    # Channels' router raised for these and the server answered HTTP 500 with a traceback
    socket = communicator(path, [(b"origin", b"http://localhost"), (b"host", b"localhost")])
    connected, _ = await socket.connect()
    assert connected
    assert await socket.receive_output() == {"type": "websocket.close", "code": NOT_FOUND_CLOSE_CODE}
    assert NOT_FOUND_CLOSE_CODE == 4404
    await socket.disconnect()
    assert not [record for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]
