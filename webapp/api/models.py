"""Personal API tokens.

A token reads ``gat_<prefix>_<secret>``: the 8-hex-digit prefix is stored in clear to find the
row and to let users recognise their tokens; only the SHA-256 of the whole token is stored. A
fast hash is the right one here: the secret is 256 random bits, so there is nothing to
brute-force (slow hashes protect low-entropy passwords) and every request can be checked cheaply.
The token is shown once, when it is created.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. 'EMS bridge'")
    prefix = models.CharField(max_length=16, unique=True, help_text="the token's visible start, for lookup")
    digest = models.CharField(max_length=64, help_text="SHA-256 of the whole token (hex)")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="empty: never expires")
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token {self.prefix} ({self.name}) of {self.user.get_username()}"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        """active, expired or revoked (revoked wins)."""
        if self.revoked:
            return "revoked"
        return "expired" if self.expired else "active"
