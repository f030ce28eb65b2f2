"""The audit log is append-only at the database level on every supported database: raw SQL
UPDATE and DELETE are refused on Postgres (the suite's database) and on SQLite (the embedded
default, migrated from scratch into a temporary file)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction

from webapp.audit.services import audit_record

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_postgres_refuses_update_and_delete_of_audit_entries(engineer):
    assert connection.vendor == "postgresql", "the suite runs on Postgres (see tests/webapp/conftest.py)"
    entry = audit_record(actor=engineer, action="run.launch", target=engineer, comment="kept")
    for statement in (
        "UPDATE audit_auditentry SET comment = 'rewritten' WHERE id = %s",
        "DELETE FROM audit_auditentry WHERE id = %s",
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement, [entry.pk])
    entry.refresh_from_db()
    assert entry.comment == "kept"


def test_sqlite_refuses_update_and_delete_of_audit_entries(tmp_path):
    database = tmp_path / "gridace.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(DATABASE_URL=f"sqlite:///{database}", GRIDACE_VAR_DIR=str(tmp_path))
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    with sqlite3.connect(database) as db:
        db.execute(
            "INSERT INTO audit_auditentry (at, actor_name, action, target_type, target_id, target_repr,"
            " before, after, comment) VALUES ('2026-01-01', 'operator', 'decision.accept', 'x', '1', 'x',"
            " '{}', '{}', 'kept')"
        )
        for statement in (
            "UPDATE audit_auditentry SET comment = 'rewritten'",
            "DELETE FROM audit_auditentry",
        ):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                db.execute(statement)
        assert db.execute("SELECT comment FROM audit_auditentry").fetchall() == [("kept",)]
