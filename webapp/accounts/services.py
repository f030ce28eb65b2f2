"""Creating users with a role (used by ``seed_demo`` and by administrators' scripts)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group, Permission
from django.db import transaction

from webapp.accounts.roles import ROLE_PERMISSIONS, ROLES, STAFF_ROLES


@transaction.atomic
def role_groups_sync() -> list[Group]:
    """Make the role groups hold exactly the permissions of :data:`ROLE_PERMISSIONS` (idempotent;
    the data migration did the same when the database was created)."""
    groups = []
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for dotted in perms:
            app_label, codename = dotted.split(".")
            permission = Permission.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            if permission is None:
                raise ValueError(f"permission {dotted!r} does not exist; run `manage.py migrate` first")
            wanted.append(permission)
        group.permissions.set(wanted)
        groups.append(group)
    return groups


@transaction.atomic
def user_create_with_role(*, username: str, password: str, role: str, email: str = "") -> AbstractUser:
    """Create an active user in one role's group; staff (admin access) for engineers and reviewers."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; accepted: {', '.join(ROLES)}")
    group = Group.objects.filter(name=role).first()
    if group is None:
        raise ValueError(f"group {role!r} is missing; run `manage.py migrate` first")
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ValueError(f"a user named {username!r} already exists; choose another username")
    user = user_model.objects.create_user(username=username, password=password, email=email)
    user.is_staff = role in STAFF_ROLES
    user.save(update_fields=["is_staff"])
    user.groups.add(group)
    return user


@transaction.atomic
def user_set_password(*, user: AbstractUser, password: str) -> AbstractUser:
    user.set_password(password)
    user.save(update_fields=["password"])
    return user
