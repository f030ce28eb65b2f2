"""Home page (what each role can open) and the CSRF failure page."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.generic import TemplateView

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
