"""App config for the HTTP API and its tokens."""

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "webapp.api"
    label = "api"
    verbose_name = "HTTP API"
