"""Websocket routes of the review pages."""

from django.urls import path

from webapp.review.consumers import ReviewQueueConsumer

websocket_urlpatterns = [
    path("ws/review/", ReviewQueueConsumer.as_asgi(), name="ws_review_queue"),
]
