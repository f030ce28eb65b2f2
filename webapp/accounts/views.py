"""Home page (what each role can open), the CSRF failure page, the login lockout page, and the
administrators' page of lockouts in force (with the security log's newest refusals)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from webapp.accounts import roles, selectors, services
from webapp.accounts.forms import LoginForm
from webapp.accounts.lockouts import base_cool_off, cool_off
from webapp.accounts.permissions import AnyRoleGate, PermissionGate
from webapp.training.selectors.deployments import deployment_current


class HomeView(AnyRoleGate, TemplateView):
    template_name = "accounts/home.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["roles"] = selectors.user_roles(self.request.user)
        context["deployment"] = deployment_current()
        return context


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Refused POST without a valid CSRF token: say so, and how to recover."""
    return render(request, "403_csrf.html", {"reason": reason}, status=403)


def _minutes(seconds: float) -> int:
    return max(1, round(seconds / 60))


def locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """The login page saying log-ins are locked (django-axes calls this after too many failures)."""
    context = {
        "form": LoginForm(request),
        "locked_out": True,
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "lockout_minutes": _minutes(cool_off(request).total_seconds()),
    }
    return render(request, "registration/login.html", context, status=429)


class LockoutListView(PermissionGate, View):
    permission_required = roles.UNLOCK_LOGINS

    def get(self, request: HttpRequest) -> HttpResponse:
        context = {
            "lockouts": selectors.lockout_list(),
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "lockout_minutes": _minutes(base_cool_off().total_seconds()),
            "security_events": selectors.security_event_list(),
            "security_count": selectors.security_event_count(),
        }
        return render(request, "accounts/lockout_list.html", context)


class LockoutLiftView(PermissionGate, View):
    permission_required = roles.UNLOCK_LOGINS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        try:
            lifted = services.lockout_lift(attempt_id=pk, user=request.user)
        except services.LockoutError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"log-ins of {lifted['username']!r} from {lifted['address']} unlocked")
        return HttpResponseRedirect(reverse("accounts:lockout_list"))
