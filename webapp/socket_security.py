"""What a websocket must prove before and while it is open.

* :class:`SameOriginValidator` lets a socket in only when its ``Origin`` is exactly (scheme, host
  and port) the site's own origin, the one the socket itself is opened on (``Host`` is one of
  ``ALLOWED_HOSTS``), or one of ``CSRF_TRUSTED_ORIGINS``: the rule Django's CSRF check applies to
  a POST. Channels' ``AllowedHostsOriginValidator`` compares host names only, so a page of any
  other web app on the same host (``http://localhost:3000``) could read the sockets with the
  user's cookies.
* :func:`session_still_valid` tells a consumer whether the session that opened the socket still
  signs its user in (not logged out, not expired, password unchanged, user active); the relay
  consumer asks every ``GRIDACE_SOCKET_SESSION_CHECK_SECONDS`` and closes the socket when not.
"""

from __future__ import annotations

import time
from importlib import import_module
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth import get_user
from django.http.request import split_domain_port, validate_host

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
