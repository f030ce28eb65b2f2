"""The hash chain's two columns. The append-only triggers go first: SQLite rebuilds the table to
add a column (dropping its triggers anyway), and 0005 must write the hashes of existing rows;
0006 creates the triggers again on both databases."""

from django.db import migrations, models

POSTGRES_DROP = """
DROP TRIGGER IF EXISTS audit_entry_append_only ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_entry_append_only();
"""
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS audit_entry_no_{op};" for op in ("update", "delete")]


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_append_only_sqlite")]

    operations = [
        migrations.RunPython(drop_triggers, migrations.RunPython.noop),
        migrations.AddField(
            model_name="auditentry",
            name="prev_hash",
            field=models.CharField(
                default="",
                db_default="",
                editable=False,
                help_text="the entry_hash of the entry before (by id)",
                max_length=64,
            ),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="entry_hash",
            field=models.CharField(
                default="",
                db_default="",
                editable=False,
                help_text="sha256 of prev_hash and this entry's content",
                max_length=64,
            ),
        ),
    ]
