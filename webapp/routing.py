"""Every websocket route of the site, gathered from the apps."""

from webapp.operations.routing import websocket_urlpatterns as operations_routes
from webapp.review.routing import websocket_urlpatterns as review_routes
from webapp.training.routing import websocket_urlpatterns as training_routes

websocket_urlpatterns = [*training_routes, *review_routes, *operations_routes]
