"""App config for review."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "webapp.review"
    label = "review"
    verbose_name = "Review"
