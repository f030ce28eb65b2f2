"""The security log: refused and throttled requests, kept apart from the decision audit.

The audit log (``webapp.audit``) is append-only and keeps every decision forever; a client can
produce refusals as fast as it can send requests, so those go here instead: repeats of one
refusal within a minute add to one row's ``count``, and the log keeps only the newest
``GRIDACE_SECURITY_LOG_MAX_ROWS`` rows of the last ``GRIDACE_SECURITY_LOG_DAYS`` days (pruned on
write and by ``manage.py security_log_prune``).

The model also carries the permission to list and lift login lockouts.
"""

from __future__ import annotations

from django.db import models


class SecurityEventKind(models.TextChoices):
    REFUSED = "api.refused", "API request refused"
    THROTTLED = "api.throttled", "API request over a rate limit"


class SecurityEvent(models.Model):
    kind = models.CharField(max_length=32, choices=SecurityEventKind.choices)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField(db_index=True)
    count = models.PositiveIntegerField(default=1, help_text="repeats merged into this row")
    status = models.PositiveSmallIntegerField(help_text="the HTTP status answered")
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=300)
    address = models.GenericIPAddressField(null=True, blank=True)
    username = models.CharField(max_length=150, blank=True, help_text="the token's user, when known")
    token_prefix = models.CharField(max_length=16, blank=True)
    detail = models.CharField(max_length=300, blank=True, help_text="the refusal's message")

    class Meta:
        ordering = ["-last_at", "-id"]
        default_permissions = ("view",)
        permissions = [("unlock_login", "Can list and lift login lockouts")]
        verbose_name = "security event"

    def __str__(self) -> str:
        return f"{self.kind} {self.status} {self.method} {self.path} x{self.count}"
