"""Puts what the user may do into every template, so the navigation shows only their pages."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from webapp.accounts import roles as perms


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"can": {}}
    return {
        "can": {
            "view_runs": user.has_perm(perms.VIEW_RUNS),
            "launch_runs": user.has_perm(perms.LAUNCH_RUNS),
            "view_refinements": user.has_perm(perms.VIEW_REFINEMENTS),
            "view_shapings": user.has_perm(perms.VIEW_SHAPINGS),
            "view_audit": user.has_perm(perms.VIEW_AUDIT),
            "view_deployment": user.has_perm(perms.VIEW_DEPLOYMENT),
            "view_sessions": user.has_perm(perms.VIEW_SESSIONS),
            "start_sessions": user.has_perm(perms.START_SESSIONS),
            "unlock_logins": user.has_perm(perms.UNLOCK_LOGINS),
            "view_security_log": user.has_perm(perms.VIEW_SECURITY_LOG),
            "admin": user.is_staff,
        }
    }
