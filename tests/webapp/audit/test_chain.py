"""The audit log is tamper-evident: each entry holds the hash of the one before, and
``manage.py audit_verify`` names the first entry that was edited, removed or re-linked (exit
status 1). Writers racing on Postgres still leave one unbroken chain."""

from __future__ import annotations

import importlib
import threading

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import close_old_connections, connection, transaction

from webapp.audit.chain import GENESIS, entry_digest
from webapp.audit.models import AuditEntry
from webapp.audit.selectors import audit_chain_check
from webapp.audit.services import audit_record


def _entries(actor, count: int = 3) -> list[AuditEntry]:
    return [
        audit_record(actor=actor, action="test.chain", target=actor, after={"n": n}, comment=f"entry {n}")
        for n in range(count)
    ]


def _drop_append_only_triggers() -> None:
    """Tampering needs the triggers out of the way first (the test's transaction restores them)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER IF EXISTS audit_entry_append_only ON audit_auditentry")
        else:
            for op in ("update", "delete"):
                cursor.execute(f"DROP TRIGGER IF EXISTS audit_entry_no_{op}")


def _verify() -> str:
    with pytest.raises(CommandError) as refused:
        call_command("audit_verify")
    assert refused.value.returncode == 1
    return str(refused.value)


@pytest.mark.django_db
def test_each_entry_links_to_the_one_before_and_the_chain_verifies(engineer, capsys):
    first, second, third = _entries(engineer)
    assert first.prev_hash == GENESIS or AuditEntry.objects.filter(id__lt=first.pk).exists()
    assert (second.prev_hash, third.prev_hash) == (first.entry_hash, second.entry_hash)
    stored = AuditEntry.objects.get(pk=third.pk)  # hashes hold for the row as read back
    assert stored.entry_hash == entry_digest(stored.prev_hash, stored)
    call_command("audit_verify")
    out = capsys.readouterr().out
    assert "audit chain intact" in out and third.entry_hash in out


@pytest.mark.django_db
def test_numbers_the_database_prints_differently_still_verify(engineer):
    # Postgres' jsonb gives 1e20 back as an integer and 2.0 as 2.0: the hash sees the same number
    audit_record(
        actor=engineer, action="test.chain", target=engineer, after={"big": 1e20, "two": 2.0, "x": 0.1}
    )
    assert audit_chain_check().intact


@pytest.mark.django_db
def test_audit_verify_names_an_edited_entry(engineer):
    first, second, third = _entries(engineer)
    _drop_append_only_triggers()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditentry SET comment = 'rewritten' WHERE id = %s", [second.pk])
    message = _verify()
    assert f"audit chain broken at entry {second.pk}" in message and "edited" in message


@pytest.mark.django_db
def test_audit_verify_names_the_entry_after_a_removed_one(engineer):
    first, second, third = _entries(engineer)
    _drop_append_only_triggers()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditentry WHERE id = %s", [second.pk])
    message = _verify()
    assert f"audit chain broken at entry {third.pk}" in message and "removed" in message


@pytest.mark.django_db
def test_the_data_migration_chains_existing_entries_oldest_first(engineer):
    entries = _entries(engineer)
    _drop_append_only_triggers()
    AuditEntry.objects.update(prev_hash="", entry_hash="")  # as before the chain existed
    assert not audit_chain_check().intact
    migration = importlib.import_module("webapp.audit.migrations.0005_hash_existing_entries")
    migration.hash_entries(apps, schema_editor=None)
    assert audit_chain_check().intact
    assert AuditEntry.objects.get(pk=entries[-1].pk).entry_hash == entries[-1].entry_hash


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_leave_one_unbroken_chain(engineer):
    writers, each = 4, 10
    start = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            start.wait(timeout=30)
            for n in range(each):
                with transaction.atomic():  # as a service does: the entry inside its transaction
                    audit_record(actor=engineer, action="test.race", target=engineer, after={"n": n})
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert AuditEntry.objects.filter(action="test.race").count() == writers * each
    report = audit_chain_check()
    assert report.intact, report
    assert len(set(AuditEntry.objects.values_list("prev_hash", flat=True))) == AuditEntry.objects.count()
