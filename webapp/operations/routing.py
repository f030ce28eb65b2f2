"""Websocket routes of the live console."""

from django.urls import path

from webapp.operations.consumers import LiveSessionConsumer

websocket_urlpatterns = [
    path("ws/live/<int:pk>/", LiveSessionConsumer.as_asgi(), name="ws_live_session"),
]
