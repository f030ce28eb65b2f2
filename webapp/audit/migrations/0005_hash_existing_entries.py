"""Chain the entries written before the hash chain existed, oldest (lowest id) first."""

from django.db import migrations


def hash_entries(apps, schema_editor):
    from webapp.audit.chain import GENESIS, seal

    AuditEntry = apps.get_model("audit", "AuditEntry")
    prev_hash = GENESIS
    for entry in AuditEntry.objects.order_by("id").iterator(chunk_size=1000):
        seal(entry, prev_hash)
        AuditEntry.objects.filter(pk=entry.pk).update(prev_hash=entry.prev_hash, entry_hash=entry.entry_hash)
        prev_hash = entry.entry_hash


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_hash_chain_fields")]

    operations = [migrations.RunPython(hash_entries, migrations.RunPython.noop)]
