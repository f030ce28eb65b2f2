"""Every websocket route of the site, gathered from the apps, and the answer to any other path."""

from typing import Any

from django.urls import re_path

from webapp.operations.routing import websocket_urlpatterns as operations_routes
from webapp.review.routing import websocket_urlpatterns as review_routes
from webapp.training.routing import websocket_urlpatterns as training_routes

websocket_urlpatterns = [*training_routes, *review_routes, *operations_routes]
NOT_FOUND_CLOSE_CODE = 4404


async def _not_found(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Any other path: accepted only to close at once with 4404 (the websocket's 404), where
    Channels' router would raise and the server answer 500 with a traceback in its log. A bare
    ASGI app, not a consumer: nothing to join on the channel layer."""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": NOT_FOUND_CLOSE_CODE})
    while message["type"] != "websocket.disconnect":
        message = await receive()


socket_not_found = re_path(r"", _not_found, name="ws_not_found")
"""the router's last route (see :mod:`webapp.asgi`), kept out of :data:`websocket_urlpatterns`,
the list of real sockets"""
