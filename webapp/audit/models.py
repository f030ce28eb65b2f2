"""The audit log's one table. Rows are only ever inserted: database triggers refuse the rest
(Postgres: migration 0002, SQLite: 0003, both again in 0006), and each row holds the hash of the
row before it (:mod:`webapp.audit.chain`), so an edit made around the triggers shows."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    at = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # An audited user cannot be deleted (deactivate them instead): the log must not change.
        on_delete=models.PROTECT,
        related_name="audit_entries",
        help_text="who decided; empty for decisions the system took (e.g. stale-run recovery)",
    )
    actor_name = models.CharField(max_length=150, help_text="the actor's username when it happened")
    action = models.CharField(max_length=64, db_index=True, help_text="e.g. run.launch, refinement.approve")
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    target_repr = models.CharField(max_length=200)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True)
    prev_hash = models.CharField(
        max_length=64,
        default="",
        db_default="",
        editable=False,
        help_text="the entry_hash of the entry before (by id)",
    )
    entry_hash = models.CharField(
        max_length=64,
        default="",
        db_default="",
        editable=False,
        help_text="sha256 of prev_hash and this entry's content",
    )

    class Meta:
        ordering = ["-at", "-id"]
        default_permissions = ("view",)
        permissions = [("export_auditentry", "Can export the audit log as CSV")]
        indexes = [models.Index(fields=["target_type", "target_id"])]
        verbose_name = "audit entry"
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.target_repr}"
