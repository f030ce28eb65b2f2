"""The metrics endpoint, included at the site's root as ``/metrics``."""

from django.urls import path

from webapp.monitoring import views

app_name = "monitoring"

urlpatterns = [path("metrics", views.metrics, name="metrics")]
