"""Home page (what each role can open), the CSRF failure page and the login lockout page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.generic import TemplateView

from webapp.accounts.forms import LoginForm
from webapp.accounts.permissions import AnyRoleGate
from webapp.accounts.selectors import user_roles
from webapp.training.selectors import deployment_current


class HomeView(AnyRoleGate, TemplateView):
    template_name = "accounts/home.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["roles"] = user_roles(self.request.user)
        context["deployment"] = deployment_current()
        return context


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Refused POST without a valid CSRF token: say so, and how to recover."""
    return render(request, "403_csrf.html", {"reason": reason}, status=403)


def locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """The login page saying log-ins are locked (django-axes calls this after too many failures)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {
        "form": LoginForm(request),
        "locked_out": True,
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "lockout_minutes": minutes,
    }
    return render(request, "registration/login.html", context, status=429)
