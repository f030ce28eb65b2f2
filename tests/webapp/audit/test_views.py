"""The audit log page and its CSV export."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from webapp.audit.services import audit_record
from webapp.review.services import refinement_decide

pytestmark = pytest.mark.django_db


def test_every_decision_is_listed_with_who_what_and_before_after(reviewer, make_run, make_refinement):
    run = make_run()
    refinement_decide(
        refinement=make_refinement(run), run=run, reviewer=reviewer, decision="reject", comment="unsafe"
    )
    page = client_for(reviewer).get(reverse("audit:entry_list"))
    actions = [entry.action for entry in page.context["page"]]
    assert actions == ["refinement.reject", "run.launch"]
    html = page.content.decode()
    assert reviewer.username in html and "unsafe" in html and 'id="export"' in html
    filtered = client_for(reviewer).get(reverse("audit:entry_list"), {"action": "run.launch"})
    assert [entry.action for entry in filtered.context["page"]] == ["run.launch"]


def test_csv_export_has_one_row_per_entry_oldest_first(reviewer, make_run, make_refinement):
    run = make_run()
    refinement_decide(
        refinement=make_refinement(run),
        run=run,
        reviewer=reviewer,
        decision="approve",
        comment="=HYPERLINK(1)",
    )
    response = client_for(reviewer).get(reverse("audit:export"))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == [
        "at",
        "actor",
        "action",
        "target_type",
        "target_id",
        "target",
        "before",
        "after",
        "comment",
        "id",
        "prev_hash",
        "entry_hash",
    ]
    assert [row[2] for row in rows[1:]] == ["run.launch", "refinement.approve"]
    # the export carries the chain: each row links to the one before it
    assert rows[2][10] == rows[1][11] and all(len(row[11]) == 64 for row in rows[1:])
    assert rows[2][6] == '{"status": "pending"}'
    assert rows[2][8] == "'=HYPERLINK(1)"  # a spreadsheet will not run it


def test_engineers_read_the_log_but_do_not_export_it(engineer, make_run):
    make_run()
    client = client_for(engineer)
    page = client.get(reverse("audit:entry_list"))
    assert page.status_code == 200 and 'id="export"' not in page.content.decode()
    assert client.get(reverse("audit:export")).status_code == 403


def test_system_decisions_are_recorded_without_an_actor(make_run):
    entry = audit_record(actor=None, action="run.recover.failed", target=make_run(), comment="worker lost")
    assert entry.actor_name == "system"


def test_csv_export_defuses_formulas_behind_spaces_and_full_width_signs(reviewer):
    risky = [" =1+1", "  +cmd", "\u3000＝HYPERLINK(1)", "＋1", "－1", "＠SUM(A1)", "\u200b=x", "\n=x", "﹦1"]
    harmless = ["plain", "a=b", "", "  spaced words"]
    for comment in risky + harmless:
        audit_record(actor=reviewer, action="test.csv", target=reviewer, comment=comment)
    response = client_for(reviewer).get(reverse("audit:export"), {"action": "test.csv"})
    comments = [row[8] for row in csv.reader(io.StringIO(response.content.decode()))][1:]
    assert comments == ["'" + c for c in risky] + harmless


def test_filters_with_nul_characters_list_nothing_instead_of_failing(reviewer):
    # found by fuzzing: Postgres text cannot hold NUL, so the filter query itself failed (500)
    client = client_for(reviewer)
    for name in ("action", "actor", "target_type", "target_id"):
        assert client.get(reverse("audit:entry_list"), {name: "run.launch\x00"}).status_code == 200
        export = client.get(reverse("audit:export"), {name: "\x00"})
        assert export.status_code == 200 and len(export.content.decode().splitlines()) == 1  # the header
