"""``manage.py seed_demo``: one user per role (operator, engineer, reviewer, admin) for trying the
site.

The password comes from ``GRIDACE_DEMO_PASSWORD`` (or ``--password``); without one, a random
password is generated and printed once. Existing users are left alone unless ``--reset``.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.accounts.roles import ROLES
from webapp.accounts.services import role_groups_sync, user_create_with_role, user_set_password


class Command(BaseCommand):
    help = "Create the demo users operator, engineer, reviewer and admin (one per role)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", default=os.environ.get("GRIDACE_DEMO_PASSWORD", ""))
        parser.add_argument(
            "--reset", action="store_true", help="set the password again on users that already exist"
        )

    def handle(self, *args: Any, password: str, reset: bool, **options: Any) -> None:
        role_groups_sync()
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        user_model = get_user_model()
        created = []
        for role in ROLES:
            user = user_model.objects.filter(username=role).first()
            try:
                if user is None:
                    user_create_with_role(username=role, password=password, role=role)
                    created.append(role)
                elif reset:
                    user_set_password(user=user, password=password)
                    created.append(role)
                else:
                    self.stdout.write(f"user {role!r} exists; password unchanged (use --reset to set it)")
            except ValueError as error:
                raise CommandError(str(error)) from error
        if created:
            shown = password if generated else "(from GRIDACE_DEMO_PASSWORD / --password)"
            self.stdout.write(self.style.SUCCESS(f"demo users {', '.join(created)}; password: {shown}"))
