"""Roles, login and logout, the home page, and ``seed_demo``."""

from __future__ import annotations

import importlib

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import PASSWORD, client_for
from webapp.accounts.roles import OPERATOR, REVIEWER, ROLE_PERMISSIONS
from webapp.training.models import Checkpoint, Deployment

pytestmark = pytest.mark.django_db


def test_the_migration_creates_the_role_groups_with_their_permissions():
    # its forward step on the models as they were then, from no groups: an earlier transactional
    # test of this process may have emptied the tables since the database was made
    migration = importlib.import_module("webapp.accounts.migrations.0001_role_groups")
    state = MigrationExecutor(connection).loader.project_state(("accounts", "0001_role_groups"), at_end=False)
    Group.objects.filter(name__in=ROLE_PERMISSIONS).delete()
    migration.create_role_groups(state.apps, schema_editor=None)
    for role, permissions in ROLE_PERMISSIONS.items():
        group = Group.objects.get(name=role)
        held = {
            f"{p.content_type.app_label}.{p.codename}"
            for p in group.permissions.select_related("content_type")
        }
        assert held == set(permissions), role


def test_syncing_the_role_groups_gives_each_exactly_its_permissions_whatever_it_held():
    from django.contrib.auth.models import Permission

    from webapp.accounts.services import role_groups_sync

    role_groups_sync()  # an earlier transactional test of this process may have emptied the tables
    Group.objects.filter(name=OPERATOR).delete()  # a group missing
    stray = Permission.objects.get(content_type__app_label="auth", codename="delete_user")
    Group.objects.get(name=REVIEWER).permissions.add(stray)  # a group holding one more
    for _ in range(2):  # and again, with nothing to change
        role_groups_sync()
        for role, permissions in ROLE_PERMISSIONS.items():
            held = {
                f"{p.content_type.app_label}.{p.codename}"
                for p in Group.objects.get(name=role).permissions.select_related("content_type")
            }
            assert held == set(permissions), role


def test_login_and_logout(engineer):
    client = Client()
    assert client.get(reverse("accounts:home")).status_code == 302
    response = client.post(reverse("accounts:login"), {"username": engineer.username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("accounts:home")
    assert client.get(reverse("accounts:home")).status_code == 200
    bad = Client().post(reverse("accounts:login"), {"username": engineer.username, "password": "wrong"})
    assert "did not match" in bad.content.decode()
    assert client.post(reverse("accounts:logout")).status_code == 302
    assert client.get(reverse("accounts:home")).status_code == 302


def test_home_shows_each_role_its_own_sections(role_users, make_run, engineer):
    def home(role: str) -> str:
        return client_for(role_users[role]).get(reverse("accounts:home")).content.decode()

    assert "Training runs" in home("engineer") and "Review queue" not in home("engineer")
    assert "Open the review queue" in home("reviewer") and "Launch a run" not in home("reviewer")
    assert "No policy has been deployed yet" in home("operator")
    run = make_run()
    checkpoint = Checkpoint.objects.create(run=run, step=300, path="/x.pt")
    Deployment.objects.create(
        checkpoint=checkpoint, deployed_by=engineer, deployed_at=run.created_at, path="/d.pt"
    )
    assert f"Run {run.pk}, checkpoint at step 300" in home("operator")
    assert client_for(role_users["none"]).get(reverse("accounts:home")).status_code == 403


def test_seed_demo_creates_one_user_per_role_once(capsys, monkeypatch):
    monkeypatch.delenv("GRIDACE_DEMO_PASSWORD", raising=False)
    call_command("seed_demo")
    out = capsys.readouterr().out
    password = out.strip().rsplit("password: ", 1)[1]
    users = get_user_model().objects.order_by("username")
    assert [u.username for u in users] == ["admin", "engineer", "operator", "reviewer"]
    assert all(u.check_password(password) for u in users)
    assert [g.name for g in users.get(username="reviewer").groups.all()] == ["reviewer"]
    assert users.get(username="engineer").is_staff and not users.get(username="operator").is_staff
    assert users.get(username="admin").has_perm("accounts.unlock_login")
    call_command("seed_demo")
    assert "password unchanged" in capsys.readouterr().out
    assert get_user_model().objects.get(username="engineer").check_password(password)


def test_seed_demo_takes_the_password_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("GRIDACE_DEMO_PASSWORD", "from-the-env-123")
    call_command("seed_demo")
    assert "from-the-env-123" not in capsys.readouterr().out
    assert get_user_model().objects.get(username="operator").check_password("from-the-env-123")
