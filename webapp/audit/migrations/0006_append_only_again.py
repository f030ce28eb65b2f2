"""The append-only triggers of 0002 (Postgres) and 0003 (SQLite) again, after 0004 dropped them
to add and fill the hash chain's columns."""

from django.db import migrations

POSTGRES_CREATE = """
CREATE OR REPLACE FUNCTION audit_entry_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % on audit_auditentry is refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_entry_append_only
    BEFORE UPDATE OR DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_entry_append_only();
"""
POSTGRES_DROP = """
DROP TRIGGER IF EXISTS audit_entry_append_only ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_entry_append_only();
"""
MESSAGE = "the audit log is append-only: {op} on audit_auditentry is refused"
SQLITE_CREATE = [
    f"""
CREATE TRIGGER IF NOT EXISTS audit_entry_no_{op.lower()}
    BEFORE {op} ON audit_auditentry
    BEGIN SELECT RAISE(ABORT, '{MESSAGE.format(op=op)}'); END;
"""
    for op in ("UPDATE", "DELETE")
]
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS audit_entry_no_{op};" for op in ("update", "delete")]


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_CREATE, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_hash_existing_entries")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
