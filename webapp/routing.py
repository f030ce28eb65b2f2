"""Every websocket route of the site, gathered from the apps."""

from webapp.review.routing import websocket_urlpatterns as review_routes
from webapp.training.routing import websocket_urlpatterns as training_routes

websocket_urlpatterns = [*training_routes, *review_routes]
