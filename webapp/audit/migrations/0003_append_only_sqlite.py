"""On SQLite (the embedded default), triggers refuse UPDATE and DELETE on the audit log, as the
Postgres trigger of 0002 does there: on every supported database rows are only inserted.

SQLite drops a table's triggers when Django rebuilds the table (most ALTERs): a later migration
that alters ``audit_auditentry`` must create these triggers again.
"""

from django.db import migrations

MESSAGE = "the audit log is append-only: {op} on audit_auditentry is refused"
CREATE = [
    f"""
CREATE TRIGGER IF NOT EXISTS audit_entry_no_{op.lower()}
    BEFORE {op} ON audit_auditentry
    BEGIN SELECT RAISE(ABORT, '{MESSAGE.format(op=op)}'); END;
"""
    for op in ("UPDATE", "DELETE")
]
DROP = [f"DROP TRIGGER IF EXISTS audit_entry_no_{op};" for op in ("update", "delete")]


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in CREATE:
            schema_editor.execute(statement, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
