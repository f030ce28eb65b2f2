"""Websocket routes of the training pages."""

from django.urls import path

from webapp.training.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:pk>/", RunConsumer.as_asgi(), name="ws_run"),
]
