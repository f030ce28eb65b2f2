"""ASGI entry point: HTTP through Django, websockets through Channels (daphne serves both).

Everything the process imports at start (Django, the URLconf and through it grid2op and torch
for the what-if service) is moved out of the garbage collector's reach with ``gc.freeze()``:
otherwise each full collection walks that heap and stalls every socket of the process for
100-200 ms, which was the whole p99 of the live console's fan-out.

Websockets pass the exact Origin check of :mod:`webapp.socket_security` (scheme, host and port:
a page from any other site or port cannot open one), then the session middleware and
:class:`~webapp.socket_security.SocketAuthMiddleware`, which puts ``scope["user"]`` (resolved in
the consumer's own thread hop); each consumer checks the user's permission itself and closes when
the session ends. A path no socket has is accepted and closed at once with 4404.
"""

from __future__ import annotations

import gc
import os
from importlib import import_module

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.sessions import SessionMiddlewareStack  # noqa: E402
from django.conf import settings  # noqa: E402

from webapp.routing import socket_not_found, websocket_urlpatterns  # noqa: E402
from webapp.socket_security import SameOriginValidator, SocketAuthMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(
            SessionMiddlewareStack(
                SocketAuthMiddleware(URLRouter([*websocket_urlpatterns, socket_not_found]))
            )
        ),
    }
)

import_module(settings.ROOT_URLCONF)  # every view now, rather than on the first request
gc.freeze()
