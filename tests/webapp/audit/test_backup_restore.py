"""Backup and restore as docs/web.md describes it: ``pg_dump -Fc`` of the database restored with
``pg_restore`` into a fresh database holds every run, decision and refinement, and its audit
chain verifies (``manage.py audit_verify --database`` on the restored database) with the same head.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from tests.webapp.test_route_coverage import stand_in_recommendation
from webapp.audit.selectors import audit_chain_check
from webapp.audit.services import audit_record
from webapp.operations.models import Decision, DecisionKind, DecisionStatus, LiveSession
from webapp.review.services import refinement_decide
from webapp.training.models import Checkpoint, Deployment

TABLES = ("training_trainingrun", "review_refinement", "operations_decision", "audit_auditentry")
TOOLS = ("pg_dump", "pg_restore", "createdb", "dropdb", "psql")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not all(shutil.which(tool) for tool in TOOLS), reason="needs the Postgres CLIs"),
]


def _cli(*args: str) -> str:
    db = connection.settings_dict
    where = ["-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432), "-U", db["USER"] or "postgres"]
    done = subprocess.run([args[0], *where, *args[1:]], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _counts(database: str) -> dict[str, int]:
    query = " UNION ALL ".join(f"SELECT '{table}', count(*) FROM {table}" for table in TABLES)
    rows = _cli("psql", "-d", database, "-tAc", query).split()
    return {table: int(count) for table, count in (row.split("|") for row in rows)}


@contextlib.contextmanager
def _database(name: str) -> Iterator[str]:
    """A connection alias for the database ``name`` on the same server, for this test only."""
    alias = f"restored_{name}"
    # set on the handler, not in its settings: a connection made at run time, which the test
    # database guard allows
    default = connections[DEFAULT_DB_ALIAS]
    connections[alias] = type(default)({**default.settings_dict, "NAME": name}, alias)
    try:
        yield alias
    finally:
        connections[alias].close()
        del connections[alias]


def _decide(make_run, make_refinement, engineer, reviewer, operator) -> None:
    """A run, its refinement approved, and a live decision: rows of each kind, each audited."""
    run = make_run()
    refinement_decide(refinement=make_refinement(run), run=run, reviewer=reviewer, decision="approve")
    checkpoint = Checkpoint.objects.create(run=run, step=100, path="/nowhere.pt")
    deployment = Deployment.objects.create(
        checkpoint=checkpoint, deployed_by=engineer, deployed_at=timezone.now(), path="/nowhere.pt"
    )
    session = LiveSession.objects.create(
        env="l2rpn_case14_sandbox",
        scenario_index=0,
        deployment=deployment,
        created_by=engineer,
        status="stopped",
    )
    decision = Decision.objects.create(
        session=session,
        step=0,
        kind=DecisionKind.REJECT,
        recommendation=stand_in_recommendation(session),
        decided_by=operator,
        decided_at=timezone.now(),
        status=DecisionStatus.CLOSED,
    )
    audit_record(actor=operator, action="live.recommendation.reject", target=decision)


def test_a_pg_dump_restores_into_a_fresh_database_with_its_chain(
    make_run, make_refinement, engineer, reviewer, operator, tmp_path
):
    if connection.vendor != "postgresql":
        pytest.skip("pg_dump backs up Postgres; SQLite is backed up by copying its file")
    _decide(make_run, make_refinement, engineer, reviewer, operator)
    source = connection.settings_dict["NAME"]
    before, head = _counts(source), audit_chain_check().head
    assert all(before.values()), before

    dump = tmp_path / "gridace.dump"
    _cli("pg_dump", "-Fc", "-f", str(dump), source)
    restored = f"gridace_restore_{uuid.uuid4().hex[:12]}"
    _cli("createdb", restored)
    try:
        _cli("pg_restore", "--no-owner", "-d", restored, str(dump))
        assert _counts(restored) == before
        trigger = "SELECT count(*) FROM pg_trigger WHERE tgname = 'audit_entry_append_only'"
        assert _cli("psql", "-d", restored, "-tAc", trigger).strip() == "1"  # still append-only
        with _database(restored) as alias:
            call_command("audit_verify", database=alias, stdout=(out := io.StringIO()))
        assert f"intact: {before['audit_auditentry']} entries, head {head}" in out.getvalue()
    finally:
        _cli("dropdb", "--if-exists", restored)
