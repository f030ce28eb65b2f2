"""What a websocket must prove before and while it is open.

* :class:`SameOriginValidator` lets a socket in only when its ``Origin`` is exactly (scheme, host
  and port) the site's own origin, the one the socket itself is opened on (``Host`` is one of
  ``ALLOWED_HOSTS``), or one of ``CSRF_TRUSTED_ORIGINS``: the rule Django's CSRF check applies to
  a POST. Channels' ``AllowedHostsOriginValidator`` compares host names only, so a page of any
  other web app on the same host (``http://localhost:3000``) could read the sockets with the
  user's cookies.
* :class:`SocketAuthMiddleware` puts ``scope["user"]``, resolved from the session on first use: in
  the consumer's own thread hop, with the permission and the opening messages (Channels'
  ``AuthMiddleware`` spends a hop of its own on it, and at a thousand connects each hop waits in
  the one database thread).
* :func:`session_still_valid` tells a consumer whether the session that opened the socket still
  signs its user in (not logged out, not expired, password unchanged, user active);
  :func:`sessions_still_valid` answers the same for every socket of a process at once (one query
  for the sessions, one for their users), which the relay consumers' :class:`~webapp.live.relay.
  SessionWatch` asks every ``GRIDACE_SOCKET_SESSION_CHECK_SECONDS``, closing the sockets whose
  session ended. (One check per socket and period, each in its own thread hop and connection,
  kept the one database thread busy at a thousand sockets: connects then waited past daphne's
  handshake timeout and were reset.)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from importlib import import_module
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user,
    get_user_model,
    load_backend,
)
from django.core.exceptions import ValidationError
from django.http.request import split_domain_port, validate_host
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

SESSION_ENDED = 4001
"""the close code a socket gets when its session ends (logout, expiry, password change)"""

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_tuple(origin: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    values = [value for key, value in scope.get("headers", []) if key == name]
    if len(values) != 1:
        return None  # absent, or sent twice: neither is a browser's request
    try:
        return values[0].decode("latin1")
    except UnicodeDecodeError:
        return None


def _secure(scope: dict[str, Any]) -> bool:
    if scope.get("scheme") == "wss":
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, value = proxy
        header = name.lower().removeprefix("http_").replace("_", "-").encode()
        return _header(scope, header) == value
    return False


def site_origins(scope: dict[str, Any]) -> set[tuple[str, str, int]]:
    """The origins a page of this site may have when it opens this socket."""
    origins = {o for o in map(_origin_tuple, settings.CSRF_TRUSTED_ORIGINS) if o is not None}
    host = _header(scope, b"host")
    if host:
        domain, port = split_domain_port(host)
        if domain and validate_host(domain, settings.ALLOWED_HOSTS):
            scheme = "https" if _secure(scope) else "http"
            own = _origin_tuple(f"{scheme}://{host}")
            if own is not None:
                origins.add(own)
    return origins


def origin_allowed(scope: dict[str, Any]) -> bool:
    origin = _header(scope, b"origin")
    parsed = _origin_tuple(origin) if origin else None
    return parsed is not None and parsed in site_origins(scope)


class SocketAuthMiddleware:
    """ASGI middleware (inside Channels' session middleware): ``scope["user"]``, the user the
    session signs in (Django's ``get_user``: the backend, the active user, the password's session
    hash), resolved lazily, in the thread that first reads it, since it queries the database."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if "session" not in scope:
            raise ValueError("SocketAuthMiddleware needs Channels' SessionMiddleware around it")
        scope = dict(scope)
        session = scope["session"]
        scope["user"] = SimpleLazyObject(lambda: get_user(SimpleNamespace(session=session)))
        return await self.application(scope, receive, send)


class SameOriginValidator:
    """ASGI middleware: refuse (HTTP 403) a websocket whose Origin is not exactly the site's."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards websockets only")
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


_verdicts: dict[tuple[str, int], tuple[float, bool]] = {}
"""recent answers per (session, user), so that many sockets of one browser cost one check"""


def session_still_valid(session_key: str | None, user_pk: Any) -> bool:
    """Whether the session still signs in ``user_pk`` (runs the database queries: call it in a
    thread). The answer is reused for the check interval across this process's sockets."""
    if not session_key:
        return False
    key = (session_key, user_pk)
    now = time.monotonic()
    cached = _verdicts.get(key)
    if cached is not None and now - cached[0] < settings.GRIDACE_SOCKET_SESSION_CHECK_SECONDS / 2:
        return cached[1]
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    # django.contrib.auth.get_user checks what an HTTP request would: the session exists and has
    # not expired, its user is active and its password hash is the one the session was made with.
    user = get_user(SimpleNamespace(session=store))
    valid = user.is_authenticated and user.pk == user_pk
    if len(_verdicts) > 10_000:
        _verdicts.clear()
    _verdicts[key] = (now, valid)
    return valid


def sessions_still_valid(pairs: Iterable[tuple[str | None, Any]]) -> dict[tuple[str | None, Any], bool]:
    """:func:`session_still_valid` for many (session key, user pk) pairs at once (call it in a
    thread): with database sessions, one query reads every session and one every user signed in
    by Django's model backend; other session engines and backends are asked one by one."""
    from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

    pairs = set(pairs)
    store_class = import_module(settings.SESSION_ENGINE).SessionStore
    if not issubclass(store_class, DatabaseSessionStore):
        return {pair: session_still_valid(*pair) for pair in pairs}
    rows = (
        store_class.get_model_class()
        .objects.filter(session_key__in={key for key, _ in pairs if key}, expire_date__gt=timezone.now())
        .values_list("session_key", "session_data")
    )
    sessions = {key: store_class(key).decode(data) for key, data in rows}
    user_ids = {_user_id(session) for session in sessions.values()} - {None}
    users = get_user_model()._default_manager.in_bulk(user_ids)
    return {
        (key, user_pk): key in sessions and _signed_in_pk(sessions[key], users) == user_pk
        for key, user_pk in pairs
    }


def _user_id(session: dict[str, Any]) -> Any:
    try:
        return get_user_model()._meta.pk.to_python(session[SESSION_KEY])
    except (KeyError, ValidationError):
        return None


def _signed_in_pk(session: dict[str, Any], users: dict[Any, Any]) -> Any:
    """The pk of the user ``session`` signs in, or None: django.contrib.auth.get_user's checks
    (the backend, the user active, the password's session hash, its fallbacks) on a loaded session,
    with the users of Django's model backend read beforehand."""
    from django.contrib.auth.backends import ModelBackend

    user_id, backend_path = _user_id(session), session.get(BACKEND_SESSION_KEY)
    if user_id is None or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    backend = load_backend(backend_path)
    if getattr(type(backend), "get_user", None) is ModelBackend.get_user:
        user = users.get(user_id)
        user = user if user is not None and backend.user_can_authenticate(user) else None
    else:
        user = backend.get_user(user_id)
    if user is None:
        return None
    if hasattr(user, "get_session_auth_hash"):
        session_hash = session.get(HASH_SESSION_KEY)
        if not session_hash or not (
            constant_time_compare(session_hash, user.get_session_auth_hash())
            or any(constant_time_compare(session_hash, h) for h in user.get_session_auth_fallback_hash())
        ):
            return None
    return user.pk
